/* check_expansions3d.c — Check suite of the plain-C 3D Laplace expansion
 * operators (lib/expansions3d.h) against direct summation. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace3d/expansions3d.h"

#define NSRC 200
#define NTRG 60

/* ---- data ------------------------------------------------------------- */

static unsigned long long rng_state;

/* Uniform in [0, 1): a fixed xorshift so failures reproduce. */
static double uniform(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

/* n points uniform in the cube of the given side centred at c. */
static void points_in_box(size_t n, const double c[3], double side, double *xyz) {
  for (size_t i = 0; i < 3 * n; i++) xyz[i] = c[i % 3] + side * (uniform() - 0.5);
}

/* Positive charges make phi >= sum q / (rho + a), so relative errors of
 * the potential are bounded by the absolute bounds below. */
static void positive_charges(size_t n, double *q) {
  for (size_t i = 0; i < n; i++) q[i] = 0.1 + uniform();
}

static double dist(const double *a, const double *b) {
  return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

static void direct_sum(size_t ns, const double *src, const double *q, size_t nt, const double *trg,
                       double *pot, double *grad) {
  for (size_t i = 0; i < nt; i++) {
    double phi = 0.0, g[3] = {0.0, 0.0, 0.0};
    for (size_t j = 0; j < ns; j++) {
      const double r = dist(trg + 3 * i, src + 3 * j);
      phi += q[j] / r;
      for (int c = 0; c < 3; c++) g[c] -= q[j] * (trg[3 * i + c] - src[3 * j + c]) / (r * r * r);
    }
    pot[i] = phi;
    memcpy(grad + 3 * i, g, sizeof g);
  }
}

/* ---- truncation bounds --------------------------------------------------
 * Per source, the tail of 1/|x - y| = sum_n t^n P_n(cos g) / rho beyond
 * degree p, with |P_n| <= 1 and (Bernstein) |sin g P_n'| <= n, gives
 *   |phi error|  <= sum_{n>p} t^n / rho                = t^{p+1} / ((1-t) rho)
 *   |grad error| <= sum_{n>p} (2n+1) t^n / rho^2       = tail(t) / rho^2
 * (multipole: t = |y-c|/|x-c|, rho = |x-c|). For a local expansion,
 * t = |x-c|/|y-c|, rho = |y-c| and the gradient tail is tail(t) / (t rho^2). */

/* t^{-s} sum_{n>p} (2n+1) t^n, s = 0 or 1, as a closed form. */
static double grad_tail(int p, double t, int s) {
  return pow(t, p + 1 - s) * ((2 * p + 3) / (1 - t) + 2 * t / ((1 - t) * (1 - t)));
}

typedef struct bounds {
  double pot, grad;
} bounds;

/* Bounds at target x for sources y_j expanded about c: multipole if
 * local == 0, local expansion otherwise. */
static bounds truncation_bounds(int p, const double c[3], size_t ns, const double *src, const double *q,
                                const double *x, int local) {
  bounds b = {0.0, 0.0};
  const double rx = dist(x, c);
  for (size_t j = 0; j < ns; j++) {
    const double ry = dist(src + 3 * j, c);
    const double rho = local ? ry : rx;
    const double t = local ? rx / ry : ry / rx;
    b.pot += fabs(q[j]) * pow(t, p + 1) / ((1 - t) * rho);
    b.grad += fabs(q[j]) * grad_tail(p, t, local) / (rho * rho);
  }
  return b;
}

/* Floating-point slack: a few hundred ulps of the largest term. */
static bounds roundoff(size_t ns, const double *src, const double *q, const double *x) {
  bounds b = {0.0, 0.0};
  for (size_t j = 0; j < ns; j++) {
    const double r = dist(x, src + 3 * j);
    b.pot += 1e-13 * fabs(q[j]) / r;
    b.grad += 1e-13 * fabs(q[j]) / (r * r);
  }
  return b;
}

/* ---- error measures ----------------------------------------------------- */

typedef struct errors {
  double pot, grad; /* relative 2-norm errors over all targets */
} errors;

static errors relative_errors(size_t nt, const double *pot, const double *grad, const double *pot_ref,
                              const double *grad_ref) {
  double ep = 0, np = 0, eg = 0, ng = 0;
  for (size_t i = 0; i < nt; i++) {
    ep += (pot[i] - pot_ref[i]) * (pot[i] - pot_ref[i]);
    np += pot_ref[i] * pot_ref[i];
    for (int c = 0; c < 3; c++) {
      const double d = grad[3 * i + c] - grad_ref[3 * i + c];
      eg += d * d;
      ng += grad_ref[3 * i + c] * grad_ref[3 * i + c];
    }
  }
  return (errors){sqrt(ep / np), sqrt(eg / ng)};
}

/* Asserts that target i is within the bound (times factor) plus roundoff. */
static void assert_within(int p, size_t i, const double *pot, const double *grad, const double *pot_ref,
                          const double *grad_ref, bounds b, bounds fp, double factor) {
  double gerr = 0.0;
  for (int c = 0; c < 3; c++)
    gerr += (grad[3 * i + c] - grad_ref[3 * i + c]) * (grad[3 * i + c] - grad_ref[3 * i + c]);
  gerr = sqrt(gerr);
  const double perr = fabs(pot[i] - pot_ref[i]);
  ck_assert_msg(perr <= factor * b.pot + fp.pot, "p=%d target %zu: potential error %g > bound %g", p, i, perr,
                factor * b.pot);
  ck_assert_msg(gerr <= factor * b.grad + fp.grad, "p=%d target %zu: gradient error %g > bound %g", p, i,
                gerr, factor * b.grad);
}

/* ---- fixtures: a source box and a well-separated target box ------------- */

static const double src_center[3] = {0.3, -0.2, 0.1};
/* Target box 3 box sizes away along x: |x - c| >= 2.5 while |y - c| <=
 * sqrt(3)/2, so t <= 0.347 and t^21 < 2.3e-10. */
static const double far_offset[3] = {3.0, 0.0, 0.0};

static double src[3 * NSRC], q[NSRC], trg[3 * NTRG];

static void make_boxes(const double near_center[3], const double far_center[3], double *near_pts,
                       size_t n_near, double *far_pts, size_t n_far) {
  rng_state = 0x9E3779B97F4A7C15ull;
  points_in_box(n_near, near_center, 1.0, near_pts);
  points_in_box(n_far, far_center, 1.0, far_pts);
  positive_charges(NSRC, q);
}

static const int orders[] = {1, 2, 4, 8, 12, 16, 20};
#define NORDERS (int)(sizeof orders / sizeof orders[0])

/* ---- (a) P2M then M2P ----------------------------------------------------- */

START_TEST(test_p2m_m2p_converges) {
  double far_center[3];
  for (int c = 0; c < 3; c++) far_center[c] = src_center[c] + far_offset[c];
  make_boxes(src_center, far_center, src, NSRC, trg, NTRG);
  /* One target on the z axis of the centre: no division by sin(theta). */
  trg[0] = src_center[0], trg[1] = src_center[1], trg[2] = src_center[2] + 3.0;

  double pot_ref[NTRG], grad_ref[3 * NTRG], pot[NTRG], grad[3 * NTRG];
  direct_sum(NSRC, src, q, NTRG, trg, pot_ref, grad_ref);
  double last_pot = INFINITY, last_grad = INFINITY;
  for (int k = 0; k < NORDERS; k++) {
    const int p = orders[k];
    double *M = calloc(2 * fmmcl_exp3d_ncoef(p), sizeof *M);
    fmmcl_exp3d_p2m(p, src_center, NSRC, src, q, M);
    memset(pot, 0, sizeof pot);
    memset(grad, 0, sizeof grad);
    fmmcl_exp3d_m2p(p, src_center, M, NTRG, trg, pot, grad);
    for (size_t i = 0; i < NTRG; i++)
      assert_within(p, i, pot, grad, pot_ref, grad_ref,
                    truncation_bounds(p, src_center, NSRC, src, q, trg + 3 * i, 0),
                    roundoff(NSRC, src, q, trg + 3 * i), 1.0);
    errors e = relative_errors(NTRG, pot, grad, pot_ref, grad_ref);
    printf("P2M-M2P   p=%2d  potential %.2e  gradient %.2e\n", p, e.pot, e.grad);
    ck_assert_msg(e.pot < last_pot && e.grad < last_grad, "no decrease at p=%d", p);
    last_pot = e.pot, last_grad = e.grad;
    free(M);
  }
  /* The bound at p = 20: sum t^21/(1-t) / rho with t <= 0.347, relative to
   * phi >= Q/(rho + a): below 2.3e-10 * 3.4/2.5/0.65 < 5e-10. */
  ck_assert_double_lt(last_pot, 5e-10);
}
END_TEST

/* ---- (c) P2L then L2P ----------------------------------------------------- */

START_TEST(test_p2l_l2p_converges) {
  double far_center[3];
  for (int c = 0; c < 3; c++) far_center[c] = src_center[c] + far_offset[c];
  /* Sources far, targets near the expansion centre (one exactly at it). */
  make_boxes(src_center, far_center, trg, NTRG, src, NSRC);
  memcpy(trg, src_center, sizeof src_center);

  double pot_ref[NTRG], grad_ref[3 * NTRG], pot[NTRG], grad[3 * NTRG];
  direct_sum(NSRC, src, q, NTRG, trg, pot_ref, grad_ref);
  double last_pot = INFINITY, last_grad = INFINITY;
  for (int k = 0; k < NORDERS; k++) {
    const int p = orders[k];
    double *L = calloc(2 * fmmcl_exp3d_ncoef(p), sizeof *L);
    fmmcl_exp3d_p2l(p, src_center, NSRC, src, q, L);
    memset(pot, 0, sizeof pot);
    memset(grad, 0, sizeof grad);
    fmmcl_exp3d_l2p(p, src_center, L, NTRG, trg, pot, grad);
    for (size_t i = 0; i < NTRG; i++)
      assert_within(p, i, pot, grad, pot_ref, grad_ref,
                    truncation_bounds(p, src_center, NSRC, src, q, trg + 3 * i, 1),
                    roundoff(NSRC, src, q, trg + 3 * i), 1.0);
    errors e = relative_errors(NTRG, pot, grad, pot_ref, grad_ref);
    printf("P2L-L2P   p=%2d  potential %.2e  gradient %.2e\n", p, e.pot, e.grad);
    ck_assert_msg(e.pot < last_pot && e.grad < last_grad, "no decrease at p=%d", p);
    last_pot = e.pot, last_grad = e.grad;
    free(L);
  }
  ck_assert_double_lt(last_pot, 5e-10);
}
END_TEST

/* ---- (b) P2M -> M2M -> M2L -> L2L -> L2P ---------------------------------- */

/* Sources in a unit child box of a side-2 parent; targets in a unit child
 * of another side-2 parent whose centre is D away. */
static const double src_parent[3] = {0.3, -0.2, 0.1};
static const double child_offset[3] = {0.5, 0.5, -0.5};
static const double trg_child_offset[3] = {-0.5, -0.5, 0.5};
static const double parent_shift[3] = {6.0, 2.0, 0.0};

/* The chain's error is that of two truncations: the multipole about the
 * source parent (seen from x) and the Taylor series about the target parent
 * (of the sources' field, t = |x - c_L| / (|D| - a)). We assert the sum of
 * the multipole bound and of that local bound. */
static bounds chain_bounds(int p, const double *x, const double *c_m, const double *c_l, double a_max) {
  bounds m = truncation_bounds(p, c_m, NSRC, src, q, x, 0);
  const double t = dist(x, c_l) / (dist(c_m, c_l) - a_max);
  double Q = 0.0;
  for (size_t j = 0; j < NSRC; j++) Q += fabs(q[j]);
  const double rho = dist(c_m, c_l) - a_max;
  m.pot += Q * pow(t, p + 1) / ((1 - t) * rho);
  m.grad += Q * grad_tail(p, t, 1) / (rho * rho);
  return m;
}

START_TEST(test_fmm_chain_converges) {
  double src_child[3], trg_parent[3], trg_child[3];
  for (int c = 0; c < 3; c++) {
    src_child[c] = src_parent[c] + child_offset[c];
    trg_parent[c] = src_parent[c] + parent_shift[c];
    trg_child[c] = trg_parent[c] + trg_child_offset[c];
  }
  make_boxes(src_child, trg_child, src, NSRC, trg, NTRG);
  double a_max = 0.0;
  for (size_t j = 0; j < NSRC; j++) a_max = fmax(a_max, dist(src + 3 * j, src_parent));

  double pot_ref[NTRG], grad_ref[3 * NTRG], pot[NTRG], grad[3 * NTRG];
  direct_sum(NSRC, src, q, NTRG, trg, pot_ref, grad_ref);
  double last_pot = INFINITY, last_grad = INFINITY;
  for (int k = 0; k < NORDERS; k++) {
    const int p = orders[k];
    const size_t len = 2 * fmmcl_exp3d_ncoef(p);
    double *Mc = calloc(len, sizeof *Mc), *Mp = calloc(len, sizeof *Mp);
    double *Lp = calloc(len, sizeof *Lp), *Lc = calloc(len, sizeof *Lc);
    fmmcl_exp3d_p2m(p, src_child, NSRC, src, q, Mc);
    fmmcl_exp3d_m2m(p, src_child, Mc, src_parent, Mp);
    fmmcl_exp3d_m2l(p, src_parent, Mp, trg_parent, Lp);
    fmmcl_exp3d_l2l(p, trg_parent, Lp, trg_child, Lc);
    memset(pot, 0, sizeof pot);
    memset(grad, 0, sizeof grad);
    fmmcl_exp3d_l2p(p, trg_child, Lc, NTRG, trg, pot, grad);
    for (size_t i = 0; i < NTRG; i++)
      assert_within(p, i, pot, grad, pot_ref, grad_ref,
                    chain_bounds(p, trg + 3 * i, src_parent, trg_parent, a_max),
                    roundoff(NSRC, src, q, trg + 3 * i), 1.0);
    errors e = relative_errors(NTRG, pot, grad, pot_ref, grad_ref);
    printf("FMM chain p=%2d  potential %.2e  gradient %.2e\n", p, e.pot, e.grad);
    ck_assert_msg(e.pot < last_pot && e.grad < last_grad, "no decrease at p=%d", p);
    last_pot = e.pot, last_grad = e.grad;
    free(Mc), free(Mp), free(Lp), free(Lc);
  }
}
END_TEST

/* ---- (d) M2M and L2L compose exactly -------------------------------------- */

static double max_abs(size_t len, const double *x) {
  double m = 0.0;
  for (size_t k = 0; k < len; k++) m = fmax(m, fabs(x[k]));
  return m;
}

static double max_diff(size_t len, const double *x, const double *y) {
  double m = 0.0;
  for (size_t k = 0; k < len; k++) m = fmax(m, fabs(x[k] - y[k]));
  return m;
}

/* Shifting a->b->c and a->c directly must agree to rounding: both shifts of
 * a truncated expansion are exact (addition theorem of R_n^m). Coefficients
 * of degree n scale like size^n, so centres stay within unit distance. */
START_TEST(test_shifts_compose_exactly) {
  const int p = 20;
  const double a[3] = {0.1, 0.2, -0.3}, b[3] = {0.6, -0.3, 0.2}, c[3] = {-0.2, 0.4, 0.5};
  const size_t len = 2 * fmmcl_exp3d_ncoef(p);
  double *X = calloc(len, sizeof *X), *Y = calloc(len, sizeof *Y);
  double *Z1 = calloc(len, sizeof *Z1), *Z2 = calloc(len, sizeof *Z2);

  rng_state = 12345;
  points_in_box(NSRC, a, 1.0, src);
  positive_charges(NSRC, q);
  fmmcl_exp3d_p2m(p, a, NSRC, src, q, X);
  fmmcl_exp3d_m2m(p, a, X, b, Y);
  fmmcl_exp3d_m2m(p, b, Y, c, Z1);
  fmmcl_exp3d_m2m(p, a, X, c, Z2);
  ck_assert_msg(max_diff(len, Z1, Z2) <= 1e-12 * max_abs(len, Z2), "M2M: %g",
                max_diff(len, Z1, Z2) / max_abs(len, Z2));

  /* Local expansion of far charges, re-expanded twice vs once. */
  double far[3] = {a[0] + 4.0, a[1], a[2]};
  points_in_box(NSRC, far, 1.0, src);
  memset(X, 0, len * sizeof *X), memset(Y, 0, len * sizeof *Y);
  memset(Z1, 0, len * sizeof *Z1), memset(Z2, 0, len * sizeof *Z2);
  fmmcl_exp3d_p2l(p, a, NSRC, src, q, X);
  fmmcl_exp3d_l2l(p, a, X, b, Y);
  fmmcl_exp3d_l2l(p, b, Y, c, Z1);
  fmmcl_exp3d_l2l(p, a, X, c, Z2);
  ck_assert_msg(max_diff(len, Z1, Z2) <= 1e-12 * max_abs(len, Z2), "L2L: %g",
                max_diff(len, Z1, Z2) / max_abs(len, Z2));

  /* M2M of the multipole about a equals P2M about c directly: exact too. */
  memset(X, 0, len * sizeof *X), memset(Z1, 0, len * sizeof *Z1);
  memset(Z2, 0, len * sizeof *Z2);
  points_in_box(NSRC, a, 1.0, src);
  fmmcl_exp3d_p2m(p, a, NSRC, src, q, X);
  fmmcl_exp3d_m2m(p, a, X, c, Z1);
  fmmcl_exp3d_p2m(p, c, NSRC, src, q, Z2);
  ck_assert_msg(max_diff(len, Z1, Z2) <= 1e-12 * max_abs(len, Z2), "M2M vs P2M: %g",
                max_diff(len, Z1, Z2) / max_abs(len, Z2));
  free(X), free(Y), free(Z1), free(Z2);
}
END_TEST

/* ---- (e) low orders --------------------------------------------------------- */

/* p = 1 holds the charge and dipole: M_0^0 = Q, M_1^0 = sum q z,
 * M_1^1 = -sum q (x + iy) / 2; p = 0 keeps only Q. */
START_TEST(test_low_orders) {
  const double c[3] = {0.0, 0.0, 0.0};
  const double xyz[6] = {0.1, 0.2, 0.3, -0.2, 0.1, -0.4};
  const double qq[2] = {2.0, -1.0};
  double M[6] = {0}, M0[2] = {0};
  fmmcl_exp3d_p2m(1, c, 2, xyz, qq, M);
  ck_assert_uint_eq(fmmcl_exp3d_ncoef(1), 3);
  ck_assert_double_eq_tol(M[0], 1.0, 1e-15);
  ck_assert_double_eq_tol(M[1], 0.0, 1e-15);
  ck_assert_double_eq_tol(M[2], 2 * 0.3 + 0.4, 1e-15);
  ck_assert_double_eq_tol(M[4], -(2 * 0.1 + 0.2) / 2, 1e-15);
  ck_assert_double_eq_tol(M[5], -(2 * 0.2 - 0.1) / 2, 1e-15);
  fmmcl_exp3d_p2m(0, c, 2, xyz, qq, M0);
  ck_assert_double_eq_tol(M0[0], 1.0, 1e-15);

  /* Dipole field at x far away, against the exact dipole formula. */
  const double x[3] = {3.0, -2.0, 5.0};
  double pot = 0.0, grad[3] = {0, 0, 0};
  fmmcl_exp3d_m2p(1, c, M, 1, x, &pot, grad);
  const double r = sqrt(38.0);
  double dip[3] = {0, 0, 0}, pd = 0.0;
  for (int k = 0; k < 3; k++) {
    dip[k] = qq[0] * xyz[k] + qq[1] * xyz[3 + k];
    pd += dip[k] * x[k];
  }
  ck_assert_double_eq_tol(pot, 1.0 / r + pd / (r * r * r), 1e-15);
  for (int k = 0; k < 3; k++) {
    const double exact = -x[k] / (r * r * r) + dip[k] / (r * r * r) - 3 * pd * x[k] / (r * r * r * r * r);
    ck_assert_double_eq_tol(grad[k], exact, 1e-15);
  }
}
END_TEST

/* ---- (f) M2L on its own, and against P2L ----------------------------------- */

/* M2L of an exact multipole vs P2L of the same charges: both are local
 * expansions about the same centre, so their values at the centre's
 * neighbourhood agree to the multipole truncation error there. */
START_TEST(test_m2l_matches_p2l) {
  const int p = 16;
  const double cm[3] = {0.0, 0.0, 0.0}, cl[3] = {0.0, 0.0, -4.0}; /* along -z axis */
  const size_t len = 2 * fmmcl_exp3d_ncoef(p);
  double *M = calloc(len, sizeof *M), *L1 = calloc(len, sizeof *L1);
  double *L2 = calloc(len, sizeof *L2);
  rng_state = 777;
  points_in_box(NSRC, cm, 1.0, src);
  positive_charges(NSRC, q);
  points_in_box(NTRG, cl, 1.0, trg);
  fmmcl_exp3d_p2m(p, cm, NSRC, src, q, M);
  fmmcl_exp3d_m2l(p, cm, M, cl, L1);
  fmmcl_exp3d_p2l(p, cl, NSRC, src, q, L2);
  double p1[NTRG] = {0}, p2[NTRG] = {0}, g1[3 * NTRG] = {0}, g2[3 * NTRG] = {0};
  fmmcl_exp3d_l2p(p, cl, L1, NTRG, trg, p1, g1);
  fmmcl_exp3d_l2p(p, cl, L2, NTRG, trg, p2, g2);
  errors e = relative_errors(NTRG, p1, g1, p2, g2);
  /* t <= (0.87 + 0.87) / 4: ratio^17 ~ 7e-7 before the 1/(1-t) factor. */
  ck_assert_double_lt(e.pot, 2e-6);
  ck_assert_double_lt(e.grad, 2e-5);
  free(M), free(L1), free(L2);
}
END_TEST

/* ---- (f) dipoles and Hessians ---------------------------------------------- */

/* The potential of charges q and dipoles dip at each target (d . r / r^3,
 * r = x - y) and its Hessian (xx, yy, zz, xy, xz, yz). */
static void direct_ext(size_t ns, const double *y, const double *qs, const double *dip, size_t nt,
                       const double *x, double *pot, double *hess) {
  static const int ha[6] = {0, 1, 2, 0, 0, 1}, hb[6] = {0, 1, 2, 1, 2, 2};
  for (size_t i = 0; i < nt; i++) {
    double p = 0, h[6] = {0, 0, 0, 0, 0, 0};
    for (size_t j = 0; j < ns; j++) {
      double r[3];
      for (int c = 0; c < 3; c++) r[c] = x[3 * i + c] - y[3 * j + c];
      const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2], ri = 1 / sqrt(r2), ri3 = ri / r2,
                   ri5 = ri3 / r2, ri7 = ri5 / r2;
      const double *d = dip + 3 * j, rd = d[0] * r[0] + d[1] * r[1] + d[2] * r[2];
      p += qs[j] * ri + rd * ri3;
      for (int k = 0; k < 6; k++) {
        const int a = ha[k], b = hb[k];
        h[k] += qs[j] * (3 * r[a] * r[b] * ri5 - (a == b) * ri3) -
                3 * (d[a] * r[b] + d[b] * r[a] + (a == b) * rd) * ri5 + 15 * rd * r[a] * r[b] * ri7;
      }
    }
    pot[i] = p;
    memcpy(hess + 6 * i, h, sizeof h);
  }
}

/* sqrt(sum (a - b)^2 / sum b^2). */
static double rel_l2(const double *a, const double *b, size_t n) {
  double e = 0, r = 0;
  for (size_t i = 0; i < n; i++) e += (a[i] - b[i]) * (a[i] - b[i]), r += b[i] * b[i];
  return sqrt(e / r);
}

/* Charges and dipoles through P2M + M2P (targets far) and P2L + L2P
 * (sources far), potential and Hessian: the errors fall with the order as
 * the charges' do (a dipole's moments are those of two close charges, the
 * Hessian two derivatives of the same series) and reach 1e-8 at p = 20. */
START_TEST(test_dipoles_hessian_converge) {
  double far_center[3], dip[3 * NSRC];
  for (int c = 0; c < 3; c++) far_center[c] = src_center[c] + far_offset[c];
  for (int local = 0; local < 2; local++) {
    if (local) make_boxes(src_center, far_center, trg, NTRG, src, NSRC);
    else make_boxes(src_center, far_center, src, NSRC, trg, NTRG);
    for (size_t j = 0; j < 3 * NSRC; j++) dip[j] = uniform() - 0.5;
    double pot_ref[NTRG], hess_ref[6 * NTRG], pot[NTRG], grad[3 * NTRG], hess[6 * NTRG];
    direct_ext(NSRC, src, q, dip, NTRG, trg, pot_ref, hess_ref);
    double last_pot = INFINITY, last_hess = INFINITY;
    for (int k = 0; k < NORDERS; k++) {
      const int p = orders[k];
      double *E = calloc(2 * fmmcl_exp3d_ncoef(p), sizeof *E);
      memset(pot, 0, sizeof pot), memset(hess, 0, sizeof hess);
      if (local) {
        fmmcl_exp3d_p2l(p, src_center, NSRC, src, q, E);
        fmmcl_exp3d_p2l_dipoles(p, src_center, NSRC, src, dip, E);
        fmmcl_exp3d_l2p(p, src_center, E, NTRG, trg, pot, grad);
        fmmcl_exp3d_l2p_hessian(p, src_center, E, NTRG, trg, hess);
      } else {
        fmmcl_exp3d_p2m(p, src_center, NSRC, src, q, E);
        fmmcl_exp3d_p2m_dipoles(p, src_center, NSRC, src, dip, E);
        fmmcl_exp3d_m2p(p, src_center, E, NTRG, trg, pot, grad);
        fmmcl_exp3d_m2p_hessian(p, src_center, E, NTRG, trg, hess);
      }
      const double ep = rel_l2(pot, pot_ref, NTRG), eh = rel_l2(hess, hess_ref, 6 * NTRG);
      printf("%s p=%2d  potential %.2e  Hessian %.2e (charges and dipoles)\n", local ? "P2L-L2P" : "P2M-M2P",
             p, ep, eh);
      ck_assert_msg(ep < last_pot && eh < last_hess, "no decrease at p=%d", p);
      last_pot = ep, last_hess = eh;
      free(E);
    }
    ck_assert_double_lt(last_pot, 1e-8);
    ck_assert_double_lt(last_hess, 1e-8);
  }
}
END_TEST

static Suite *expansions3d_suite(void) {
  Suite *s = suite_create("expansions3d");
  TCase *tc = tcase_create("reference");
  tcase_add_test(tc, test_p2m_m2p_converges);
  tcase_add_test(tc, test_p2l_l2p_converges);
  tcase_add_test(tc, test_fmm_chain_converges);
  tcase_add_test(tc, test_shifts_compose_exactly);
  tcase_add_test(tc, test_low_orders);
  tcase_add_test(tc, test_m2l_matches_p2l);
  tcase_add_test(tc, test_dipoles_hessian_converge);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(expansions3d_suite());
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
