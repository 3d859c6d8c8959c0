/* check_fgt.c — Check suite of the fast Gauss transform: the multi-index
 * order, the bound, each plain-C operator chain and the whole plain-C FGT
 * against the direct Gaussian sum, then the device plan against both. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/fgt/fgt.h"
#include "test_util.h"

/* ---- data ------------------------------------------------------------- */

enum { UNIFORM, CLUSTERED }; /* fmmcl_test_cluster_points's kinds */

/* max |a - ref| / sum |q|: the quantity the FGT bound controls */
static double scaled_max_error(const double *a, const double *ref, size_t n, const double *q, size_t ns) {
  double e = 0, Q = 0;
  for (size_t i = 0; i < n; i++) e = fmax(e, fabs(a[i] - ref[i]));
  for (size_t i = 0; i < ns; i++) Q += fabs(q[i]);
  return e / Q;
}

static void direct_sum(int dim, double sigma, size_t ns, const double *src, const double *q, size_t nt,
                       const double *tgt, double *pot) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
  o.dim = dim;
  o.sigma = sigma;
  o.gradient = 0;
  ck_assert_int_eq(fmmcl_reference_direct(&o, ns, src, q, nt, tgt, pot, NULL), FMMCL_SUCCESS);
}

/* The plain-C FGT of (tol or order, force) against the direct sum: returns
 * the scaled max error and the plan's bound in *bound. */
static double reference_error(int dim, double sigma, double tol, int order, int force, int kind, size_t ns,
                              size_t nt, double *bound, fmmcl_fgt_setup *keep) {
  double *src = malloc(ns * dim * sizeof *src), *tgt = malloc(nt * dim * sizeof *tgt);
  double *q = malloc(ns * sizeof *q), *ref = malloc(nt * sizeof *ref), *got = malloc(nt * sizeof *got);
  fmmcl_test_cluster_points(kind, 7, ns, dim, src);
  fmmcl_test_cluster_points(kind, 8, nt, dim, tgt);
  fmmcl_test_random_values(9, ns, -1, 1, q);
  double extent[FMMCL_MAX_DIM];
  for (int k = 0; k < dim; k++) extent[k] = 1 / (sqrt(2.0) * sigma);
  fmmcl_fgt_params par;
  ck_assert_int_eq(fmmcl_fgt_choose(NULL, dim, sigma, tol, order, ns, extent, 0, &par), FMMCL_SUCCESS);
  fmmcl_fgt_setup s;
  ck_assert_int_eq(fmmcl_fgt_setup_build(NULL, &par, ns, src, nt, tgt, force, &s), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_fgt_ref_execute(&s, q, got), FMMCL_SUCCESS);
  direct_sum(dim, sigma, ns, src, q, nt, tgt, ref);
  double e = scaled_max_error(got, ref, nt, q, ns);
  *bound = par.bound;
  if (keep) *keep = s;
  else fmmcl_fgt_setup_free(&s);
  free(src);
  free(tgt);
  free(q);
  free(ref);
  free(got);
  return e;
}

/* ---- parameters ---------------------------------------------------------- */

START_TEST(test_multi_index_order) {
  int n = 0;
  unsigned char *a = fmmcl_fgt_multi_indices(3, 2, &n);
  const unsigned char want[] = {0, 0, 1, 0, 0, 1, 2, 0, 1, 1, 0, 2};
  ck_assert_int_eq(n, 6);
  ck_assert_mem_eq(a, want, sizeof want);
  free(a);
  a = fmmcl_fgt_multi_indices(5, 6, &n);
  ck_assert_int_eq(n, 210);     /* C(10, 6) */
  for (int t = 1; t < n; t++) { /* graded: total degree never falls */
    int d0 = 0, d1 = 0;
    for (int k = 0; k < 6; k++) d0 += a[(t - 1) * 6 + k], d1 += a[t * 6 + k];
    ck_assert_int_le(d0, d1);
  }
  free(a);
}
END_TEST

START_TEST(test_bound_falls_with_order) {
  for (int kind = FMMCL_FGT_HERMITE; kind <= FMMCL_FGT_H2T; kind++) {
    double prev = HUGE_VAL;
    for (int p = 2; p <= 24; p += 2) {
      double b = fmmcl_fgt_truncation_bound(kind, p, 0.5, 3);
      ck_assert(b < prev);
      prev = b;
    }
    ck_assert(prev < 1e-6);
  }
  fmmcl_fgt_params par;
  double extent[3] = {2, 2, 2};
  for (double tol = 1e-3; tol > 1e-9; tol *= 1e-1) {
    ck_assert_int_eq(fmmcl_fgt_choose(NULL, 3, 0.3, tol, 0, 1000, extent, 0, &par), FMMCL_SUCCESS);
    ck_assert(par.bound <= tol);
    ck_assert(exp(-par.cutoff * par.cutoff) <= tol);
  }
  ck_assert_int_ne(fmmcl_fgt_choose(NULL, 3, 0.3, 0, 0, 1000, extent, 0, &par), FMMCL_SUCCESS);
}
END_TEST

/* The Cramer bound the plan used before (per unit charge, Hermite/Taylor):
 * K^d sum_{|alpha| >= p} prod (side/sqrt2)^a_k / sqrt(a_k!). */
static double cramer_bound(int p, double side, int d) {
  const double rho = side / sqrt(2.0);
  double one[200], c[200] = {1}, next[200];
  for (int n = 0; n < 200; n++) one[n] = exp(n * log(rho) - 0.5 * lgamma(n + 1.0));
  for (int k = 0; k < d; k++) {
    for (int n = 0; n < 200; n++) {
      next[n] = 0;
      for (int a = 0; a <= n; a++) next[n] += one[a] * c[n - a];
    }
    memcpy(c, next, sizeof c);
  }
  double t = 0;
  for (int n = p; n < 200; n++) t += c[n];
  return pow(1.086435, d) * t;
}

/* The bound in use is tighter than the Cramer bound at every order, and the
 * plan's p for d = 3 at tolerance 1e-6 falls with it: in the benchmark's
 * geometry (sigma 0.05 in the unit cube, N = 1e6) the Cramer bound made
 * the plan run p = 21 (side 1.0); now p = 13 (side 0.6). At side 1.0 the
 * Hermite bound alone needs p = 18 for 1e-6 where the Cramer bound needed
 * 21 for its half tolerance. */
START_TEST(test_tighter_bound) {
  for (int d = 1; d <= 6; d += 2)
    for (int p = 2; p <= 24; p += 2)
      for (double side = 0.25; side <= 1.0; side *= 2) {
        const double b = fmmcl_fgt_truncation_bound(FMMCL_FGT_HERMITE, p, side, d);
        ck_assert_msg(b < cramer_bound(p, side, d), "d %d p %d side %g: %g vs Cramer %g", d, p, side, b,
                      cramer_bound(p, side, d));
      }
  int p = 1;
  while (fmmcl_fgt_truncation_bound(FMMCL_FGT_HERMITE, p, 1.0, 3) > 0.99e-6) p++;
  ck_assert_int_eq(p, 18);
  p = 1;
  while (cramer_bound(p, 1.0, 3) > 0.5e-6) p++;
  ck_assert_int_eq(p, 21);
  double extent[3];
  for (int k = 0; k < 3; k++) extent[k] = 1 / (sqrt(2.0) * 0.05);
  fmmcl_fgt_params par;
  ck_assert_int_eq(fmmcl_fgt_choose(NULL, 3, 0.05, 1e-6, 0, 1000000, extent, 0, &par), FMMCL_SUCCESS);
  ck_assert_msg(par.p <= 13, "d = 3, tol 1e-6, N = 1e6: p %d (side %g)", par.p, par.side);
  ck_assert(par.bound <= 1e-6);
}
END_TEST

/* h_n(t), n < N, by the recurrence h_{n+1} = 2t h_n - 2n h_{n-1} */
static void hermite_functions(double t, int N, double *h) {
  h[0] = exp(-t * t);
  if (N > 1) h[1] = 2 * t * h[0];
  for (int n = 1; n < N - 1; n++) h[n + 1] = 2 * t * h[n] - 2 * n * h[n - 1];
}

/* The bounds are rigorous and tight where they can be checked by brute
 * force (d = 1; rounding of the check, 1e-15, allowed): a source at the
 * box corner, targets everywhere, the 1D Hermite error reaches 90% of its
 * bound; the H2T error over box offsets stays below its bound. */
START_TEST(test_bound_rigorous_1d) {
  const double sides[] = {0.5, 1.0};
  for (int si = 0; si < 2; si++)
    for (int p = 4; p <= 12; p += 4) {
      const double side = sides[si], r = side / 2;
      double h[64], worst = 0;
      for (double t = -8; t <= 8; t += 0.005) { /* Hermite, source at +r */
        hermite_functions(t, p, h);
        double sum = 0, f = 1;
        for (int n = 0; n < p; n++, f *= n) sum += pow(r, n) / f * h[n];
        worst = fmax(worst, fabs(exp(-(t - r) * (t - r)) - sum));
      }
      const double bh = fmmcl_fgt_truncation_bound(FMMCL_FGT_HERMITE, p, side, 1);
      ck_assert_msg(worst <= bh + 1e-15 && worst >= 0.9 * bh, "hermite side %g p %d: %g vs bound %g", side, p,
                    worst, bh);
      worst = 0;
      for (double D = -6; D <= 6; D += side / 4)
        for (double s0 = -r; s0 <= r + 1e-12; s0 += r / 2) {
          hermite_functions(D, 2 * p, h);
          double B[32];
          for (int b = 0; b < p; b++) {
            double acc = 0;
            for (int a = 0; a < p; a++) acc += pow(s0, a) / tgamma(a + 1) * h[a + b];
            B[b] = (b % 2 ? -1 : 1) * acc / tgamma(b + 1);
          }
          for (double w = -r; w <= r + 1e-12; w += r / 4) {
            double T = 0;
            for (int b = p - 1; b >= 0; b--) T = T * w + B[b];
            worst = fmax(worst, fabs(exp(-(D + w - s0) * (D + w - s0)) - T));
          }
        }
      const double bt = fmmcl_fgt_truncation_bound(FMMCL_FGT_H2T, p, side, 1);
      ck_assert_msg(worst <= bt + 1e-15, "h2t side %g p %d: %g above bound %g", side, p, worst, bt);
    }
}
END_TEST

/* ---- plain-C reference ----------------------------------------------------- */

/* Each chain forced on every pair within the cut-off meets its bound and,
 * at order 10, is far better than a crude sum would be. */
START_TEST(test_reference_each_kind) {
  const int dims[] = {1, 2, 3};
  for (int di = 0; di < 3; di++)
    for (int kind = FMMCL_FGT_DIRECT; kind <= FMMCL_FGT_H2T; kind++) {
      double bound;
      double e = reference_error(dims[di], 0.15, 0, 10, kind, UNIFORM, 300, 200, &bound, NULL);
      ck_assert_msg(e <= bound, "dim %d kind %d: error %g above bound %g", dims[di], kind, e, bound);
      ck_assert_msg(e < 1e-3, "dim %d kind %d: error %g", dims[di], kind, e);
      /* short expansions, where the error is large enough to test the
       * bound's rigour (clustered: boxes crowded up to their corners) */
      for (int order = 2; order <= 4; order += 2) {
        e = reference_error(dims[di], 0.15, 0, order, kind, CLUSTERED, 300, 200, &bound, NULL);
        ck_assert_msg(e <= bound, "dim %d kind %d order %d: error %g above bound %g", dims[di], kind, order,
                      e, bound);
      }
    }
  /* d = 6: the Hermite and Taylor chains at tolerance 1e-3 */
  for (int kind = FMMCL_FGT_HERMITE; kind <= FMMCL_FGT_TAYLOR; kind++) {
    double bound, e = reference_error(6, 0.4, 1e-3, 0, kind, CLUSTERED, 200, 100, &bound, NULL);
    ck_assert_msg(e <= 1e-3 && bound <= 1e-3, "dim 6 kind %d: error %g bound %g", kind, e, bound);
  }
}
END_TEST

/* The error of each expansion falls as the order rises. */
START_TEST(test_reference_error_falls) {
  for (int kind = FMMCL_FGT_HERMITE; kind <= FMMCL_FGT_H2T; kind++) {
    double bound, e4 = reference_error(2, 0.2, 0, 4, kind, UNIFORM, 200, 150, &bound, NULL);
    double e10 = reference_error(2, 0.2, 0, 10, kind, UNIFORM, 200, 150, &bound, NULL);
    ck_assert_msg(e10 < 1e-2 * e4, "kind %d: p=4 %g, p=10 %g", kind, e4, e10);
  }
}
END_TEST

static const double tols[] = {1e-3, 1e-6, 1e-8};

/* The automatic plan (kinds by work estimate) meets the tolerance in d = 1,
 * 2, 3, 6, uniform and clustered. */
START_TEST(test_reference_tolerance) {
  const int dims[] = {1, 2, 3, 6};
  const int dim = dims[_i / 2], kind = _i % 2;
  const double sigma = dim == 6 ? 0.5 : 0.1 * dim;
  for (int ti = 0; ti < 3; ti++) {
    fmmcl_fgt_setup s;
    double bound, e = reference_error(dim, sigma, tols[ti], 0, FMMCL_FGT_AUTO, kind, 1200, 1200, &bound, &s);
    ck_assert_msg(e <= bound && bound <= tols[ti], "dim %d %s tol %g: error %g bound %g", dim,
                  kind ? "clustered" : "uniform", tols[ti], e, bound);
    if (getenv("FGT_VERBOSE"))
      printf("dim %d %s tol %g: p %d side %g boxes %zu/%zu pairs %g %g %g %g error %.2e bound %.2e\n", dim,
             kind ? "clustered" : "uniform", tols[ti], s.par.p, s.par.side, s.src.nbox, s.tgt.nbox,
             s.pairs[0], s.pairs[1], s.pairs[2], s.pairs[3], e, bound);
    /* clustered data crowds boxes: at 1e-3 (short expansions) they must be in use */
    if (kind == CLUSTERED && dim < 6 && ti == 0)
      ck_assert(s.pairs[FMMCL_FGT_HERMITE] + s.pairs[FMMCL_FGT_TAYLOR] + s.pairs[FMMCL_FGT_H2T] > 0);
    fmmcl_fgt_setup_free(&s);
  }
}
END_TEST

/* sigma so large that every point shares one box, and so small that every
 * point is alone in its box. */
START_TEST(test_reference_sigma_extremes) {
  fmmcl_fgt_setup s;
  double bound, e = reference_error(3, 50.0, 1e-6, 0, FMMCL_FGT_AUTO, UNIFORM, 300, 200, &bound, &s);
  ck_assert_uint_eq(s.src.nbox, 1);
  ck_assert_uint_eq(s.tgt.nbox, 1);
  ck_assert_msg(e <= 1e-6, "large sigma: %g", e);
  fmmcl_fgt_setup_free(&s);
  e = reference_error(3, 1e-4, 1e-6, 0, FMMCL_FGT_AUTO, UNIFORM, 300, 200, &bound, &s);
  ck_assert_uint_eq(s.src.nbox, 300);
  ck_assert_msg(e <= 1e-6, "small sigma: %g", e);
  fmmcl_fgt_setup_free(&s);
  /* d = 6: the cells no longer fit a 64-bit key (the merge sort's path) */
  e = reference_error(6, 1e-4, 1e-6, 0, FMMCL_FGT_AUTO, CLUSTERED, 300, 200, &bound, &s);
  ck_assert_uint_eq(s.src.nbox, 300);
  for (size_t b = 1; b < s.src.nbox; b++) { /* boxes in lexicographic order */
    int cmp = 0;
    for (int k = 0; k < 6 && !cmp; k++)
      cmp = (s.src.cell[b * 6 + k] > s.src.cell[(b - 1) * 6 + k]) -
            (s.src.cell[b * 6 + k] < s.src.cell[(b - 1) * 6 + k]);
    ck_assert_int_eq(cmp, 1);
  }
  ck_assert_msg(e <= 1e-6, "small sigma d = 6: %g", e);
  fmmcl_fgt_setup_free(&s);
}
END_TEST

/* ---- the device plan -------------------------------------------------------- */

static fmmcl_context ctx;
static void setup(void) {
  ctx = fmmcl_test_context();
  ck_assert_ptr_nonnull(ctx);
}
static void teardown(void) { fmmcl_context_destroy(ctx); }

static const char *kind_env[] = {"direct", "hermite", "taylor", "h2t", ""};

typedef struct device_errors {
  double vs_reference, vs_direct, bound;
  double pairs[FMMCL_FGT_KINDS];
} device_errors;

/* An FGT plan on the device against the plain-C FGT on the same boxes and
 * lists (the operators), and against the direct sum (the tolerance). */
static device_errors device_run(int dim, double sigma, double tol, int order, int force, int kind,
                                fmmcl_precision prec, size_t ns, size_t nt) {
  const int same = nt == 0; /* targets = sources */
  if (same) nt = ns;
  double *src = malloc(ns * dim * sizeof *src), *tgt = malloc(nt * dim * sizeof *tgt);
  double *q = malloc(ns * sizeof *q), *ref = malloc(nt * sizeof *ref), *got = malloc(nt * sizeof *got);
  double *fgt_ref = malloc(nt * sizeof *fgt_ref);
  fmmcl_test_cluster_points(kind, 17, ns, dim, src);
  fmmcl_test_cluster_points(kind, same ? 17 : 18, nt, dim, tgt);
  fmmcl_test_random_values(19, ns, -1, 1, q);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
  o.method = FMMCL_FGT;
  o.precision = prec;
  o.dim = dim;
  o.sigma = sigma;
  o.gradient = 0;
  o.tolerance = tol;
  o.order = order;
  setenv("FMMCL_FGT_FORCE", kind_env[force], 1);
  fmmcl_plan plan;
  fmmcl_status st = fmmcl_plan_create(ctx, &o, ns, src, nt, same ? NULL : tgt, &plan);
  unsetenv("FMMCL_FGT_FORCE");
  ck_assert_msg(st == FMMCL_SUCCESS, "plan: %s", fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, got, NULL), FMMCL_SUCCESS);
  const fmmcl_fgt_setup *s = fmmcl_fgt_plan_setup(plan);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(fmmcl_fgt_ref_execute(s, q, fgt_ref), FMMCL_SUCCESS);
  direct_sum(dim, sigma, ns, src, q, nt, tgt, ref);
  device_errors e;
  e.vs_reference = scaled_max_error(got, fgt_ref, nt, q, ns);
  e.vs_direct = scaled_max_error(got, ref, nt, q, ns);
  memcpy(e.pairs, s->pairs, sizeof e.pairs);
  ck_assert_int_eq(fmmcl_plan_error_bound(plan, &e.bound), FMMCL_SUCCESS);
  if (getenv("FGT_VERBOSE"))
    printf(
        "device dim %d sigma %g tol %g order %d force %d %s: p %d pairs %g %g %g %g vs ref %.2e vs direct %.2e bound %.2e\n",
        dim, sigma, tol, order, force, prec == FMMCL_DOUBLE ? "double" : "single", s->par.p, e.pairs[0],
        e.pairs[1], e.pairs[2], e.pairs[3], e.vs_reference, e.vs_direct, e.bound);
  fflush(stdout);
  fmmcl_plan_destroy(plan);
  free(src);
  free(tgt);
  free(q);
  free(ref);
  free(got);
  free(fgt_ref);
  return e;
}

/* Each operator chain on the device matches the plain-C one to rounding:
 * direct; Hermite moments + evaluation; Taylor coefficients + evaluation;
 * moments + H2T + Taylor evaluation. */
START_TEST(test_device_each_operator) {
  const int force = _i < 8 ? _i % 4 : _i - 7, dim = _i < 4 ? 2 : _i < 8 ? 3 : 6;
  /* d = 6: Hermite and Taylor chains at order 6 (462 terms) */
  device_errors e =
      dim == 6 ? device_run(6, 0.4, 0, 6, force, CLUSTERED, FMMCL_DOUBLE, 200, 100)
               : device_run(dim, 0.2, 0, dim == 2 ? 12 : 9, force, CLUSTERED, FMMCL_DOUBLE, 300, 200);
  ck_assert(e.pairs[force] > 0);
  ck_assert_msg(e.vs_reference < 1e-12, "dim %d kind %d: device vs reference %g", dim, force, e.vs_reference);
  ck_assert_msg(e.vs_direct <= e.bound, "dim %d kind %d: %g above bound %g", dim, force, e.vs_direct,
                e.bound);
}
END_TEST

/* The coefficient operators alone: the device's Hermite moments (P2M),
 * Taylor coefficients from sources (P2L) and from H2T translations (M2L)
 * against the plain-C operators on the same boxes. */
START_TEST(test_device_coefficients) {
  const int dim = 2, force = _i == 0 ? FMMCL_FGT_HERMITE : _i == 1 ? FMMCL_FGT_TAYLOR : FMMCL_FGT_H2T;
  const size_t n = 300;
  double *x = malloc(n * dim * sizeof *x), *q = malloc(n * sizeof *q), *pot = malloc(n * sizeof *pot);
  fmmcl_test_cluster_points(CLUSTERED, 5, n, dim, x);
  fmmcl_test_random_values(6, n, -1, 1, q);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
  o.method = FMMCL_FGT;
  o.precision = FMMCL_DOUBLE;
  o.dim = dim;
  o.sigma = 0.2;
  o.gradient = 0;
  o.order = 12; /* the build of test_device_each_operator */
  setenv("FMMCL_FGT_FORCE", kind_env[force], 1);
  fmmcl_plan plan;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
  unsetenv("FMMCL_FGT_FORCE");
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
  const fmmcl_fgt_setup *s = fmmcl_fgt_plan_setup(plan);
  const size_t P = (size_t)s->par.nterms;
  double *M = calloc(s->nh * P + 1, sizeof *M), *B = calloc(s->ntay * P + 1, sizeof *B);
  double *A = calloc(s->nh * P + 1, sizeof *A), *Bref = calloc(s->ntay * P + 1, sizeof *Bref);
  double *qs = malloc(n * sizeof *qs);
  for (size_t i = 0; i < n; i++) qs[i] = q[s->src.perm[i]];
  ck_assert_int_eq(fmmcl_fgt_plan_coefficients(plan, M, B), FMMCL_SUCCESS);
  for (size_t h = 0; h < s->nh; h++) fmmcl_fgt_ref_hermite_coefs(s, s->hbox[h], qs, A + h * P);
  double e = 0, scale = 0;
  for (size_t h = 0; h < s->nh; h++)
    for (size_t t = 0; t < P; t++) {
      double f = 1; /* the device keeps moments: A = M / alpha! */
      for (int k = 0; k < dim; k++)
        for (int m = 2; m <= s->alpha[t * dim + k]; m++) f *= m;
      e = fmax(e, fabs(M[h * P + t] / f - A[h * P + t]));
      scale = fmax(scale, fabs(A[h * P + t]));
    }
  ck_assert_msg(e <= 1e-13 * scale, "moments: %g of %g", e, scale);
  if (force != FMMCL_FGT_HERMITE) {
    ck_assert_uint_gt(s->ntay, 0);
    for (size_t m = 0; m < s->ntay; m++) {
      const size_t t = s->tbox[m];
      const double *cT = s->tgt.centre + t * dim;
      for (size_t j = s->list_start[FMMCL_FGT_TAYLOR][t]; j < s->list_start[FMMCL_FGT_TAYLOR][t + 1]; j++)
        fmmcl_fgt_ref_taylor_add(s, s->list[FMMCL_FGT_TAYLOR][j], qs, cT, Bref + m * P);
      for (size_t j = s->list_start[FMMCL_FGT_H2T][t]; j < s->list_start[FMMCL_FGT_H2T][t + 1]; j++) {
        const uint32_t b = s->list[FMMCL_FGT_H2T][j];
        fmmcl_fgt_ref_h2t_add(&s->par, s->alpha, A + s->hslot[b] * P, s->src.centre + b * dim, cT,
                              Bref + m * P);
      }
    }
    e = scale = 0;
    for (size_t i = 0; i < s->ntay * P; i++) {
      e = fmax(e, fabs(B[i] - Bref[i]));
      scale = fmax(scale, fabs(Bref[i]));
    }
    ck_assert_msg(scale > 0 && e <= 1e-12 * scale, "Taylor coefficients (%s): %g of %g", kind_env[force], e,
                  scale);
  }
  fmmcl_plan_destroy(plan);
  free(x);
  free(q);
  free(pot);
  free(M);
  free(B);
  free(A);
  free(Bref);
  free(qs);
}
END_TEST

/* The automatic plan in double meets the tolerance in d = 1, 2, 3, 6:
 * uniform data at 1e-3, clustered at 1e-8 (1e-3 in d = 1) (each order is one more kernel
 * build, seconds under PoCL; the plain-C tests above cover the whole grid,
 * the plan tests below 1e-6). */
START_TEST(test_device_tolerance_double) {
  const int dims[] = {1, 2, 3, 6};
  const int dim = dims[_i / 2], kind = _i % 2;
  const double sigma = dim == 6 ? 0.5 : 0.1 * dim;
  for (int ti = 0; ti < 3; ti++) {
    if (ti != (kind == UNIFORM || dim == 1 ? 0 : 2)) continue; /* d = 1: p = 21 would be one more build */
    device_errors e = device_run(dim, sigma, tols[ti], 0, FMMCL_FGT_AUTO, kind, FMMCL_DOUBLE, 1000, 500);
    ck_assert_msg(e.vs_direct <= e.bound && e.bound <= tols[ti], "dim %d %s tol %g: error %g bound %g", dim,
                  kind ? "clustered" : "uniform", tols[ti], e.vs_direct, e.bound);
    ck_assert_msg(e.vs_reference < 1e-12, "device vs reference %g", e.vs_reference);
  }
}
END_TEST

/* In single precision the tolerance holds down to 1e-5, with the float
 * rounding of the sum (a few 1e-7 of sum |q|) on top. */
START_TEST(test_device_tolerance_single) {
  const double stols[] = {1e-3, 1e-5};
  for (int ti = 0; ti < 2; ti++) {
    device_errors e = device_run(2, 0.2, stols[ti], 0, FMMCL_FGT_AUTO, CLUSTERED, FMMCL_SINGLE, 1000, 1000);
    ck_assert_msg(e.vs_direct <= stols[ti] + 2e-6, "single tol %g: error %g", stols[ti], e.vs_direct);
    ck_assert(e.pairs[FMMCL_FGT_HERMITE] + e.pairs[FMMCL_FGT_TAYLOR] + e.pairs[FMMCL_FGT_H2T] > 0);
  }
}
END_TEST

/* One box holding everything, and every point alone in its box. */
START_TEST(test_device_sigma_extremes) {
  device_errors e = device_run(3, 50.0, 1e-6, 0, FMMCL_FGT_AUTO, UNIFORM, FMMCL_DOUBLE, 400, 300);
  ck_assert_msg(e.vs_direct <= 1e-6, "large sigma: %g", e.vs_direct);
  e = device_run(3, 1e-4, 1e-6, 0, FMMCL_FGT_AUTO, UNIFORM, FMMCL_DOUBLE, 400, 0);
  ck_assert_msg(e.vs_direct <= 1e-6, "small sigma: %g", e.vs_direct);
  ck_assert(e.pairs[FMMCL_FGT_DIRECT] >= 400); /* every point meets itself */
}
END_TEST

/* Targets = sources, re-execution with new charges, the bound query, and
 * the clear refusals. */
START_TEST(test_device_plan_api) {
  const size_t n = 500;
  double *x = malloc(n * 2 * sizeof *x), *q = malloc(n * sizeof *q), *pot = malloc(n * sizeof *pot),
         *ref = malloc(n * sizeof *ref);
  fmmcl_test_cluster_points(CLUSTERED, 3, n, 2, x);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
  o.method = FMMCL_FGT;
  o.precision = FMMCL_DOUBLE;
  o.dim = 2;
  o.sigma = 0.2;
  o.tolerance = 1e-3; /* p = 12: the build of the tests above */
  fmmcl_plan plan;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED); /* gradient */
  ck_assert(strstr(fmmcl_last_error(ctx), "gradient"));
  o.gradient = 0;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
  double bound;
  ck_assert_int_eq(fmmcl_plan_error_bound(plan, &bound), FMMCL_SUCCESS);
  ck_assert(bound > 0 && bound <= 1e-3);
  for (unsigned seed = 1; seed <= 2; seed++) {
    fmmcl_test_random_values(seed, n, 0, 1, q);
    ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
    direct_sum(2, 0.2, n, x, q, n, x, ref);
    ck_assert_double_le(scaled_max_error(pot, ref, n, q, n), 1e-3);
  }
  double w;
  ck_assert_int_eq(fmmcl_plan_counts(plan, "p2p", &w), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, pot), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_plan_destroy(plan);
  o.tolerance = 0;
  o.order = 30;
  o.precision = FMMCL_SINGLE; /* h_58 would overflow float */
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  o.precision = FMMCL_DOUBLE;
  o.order = 0;
  o.tolerance = 2; /* not a tolerance */
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FGT;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n / 2, x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  free(x);
  free(q);
  free(pot);
  free(ref);
}
END_TEST

/* The binning on the device gives exactly the host's boxes: the same box
 * count, starts, cells, centres, permutation (key order bit for bit) and
 * sorted coordinates, for d = 1, 3, 6, uniform and clustered, with boxes of
 * the tolerance's side and with a huge sparse grid (sigma 1e-6: 2^21 boxes
 * per axis, so d = 6 needs keys of several axis groups). */
static void same_boxes(const fmmcl_fgt_boxes *a, const fmmcl_fgt_boxes *b, int dim) {
  ck_assert_uint_eq(a->n, b->n);
  ck_assert_uint_eq(a->nbox, b->nbox);
  ck_assert(memcmp(a->perm, b->perm, a->n * sizeof *a->perm) == 0);
  ck_assert(memcmp(a->start, b->start, (a->nbox + 1) * sizeof *a->start) == 0);
  ck_assert(memcmp(a->cell, b->cell, a->nbox * dim * sizeof *a->cell) == 0);
  ck_assert(memcmp(a->centre, b->centre, a->nbox * dim * sizeof *a->centre) == 0);
  ck_assert(memcmp(a->x, b->x, a->n * dim * sizeof *a->x) == 0);
}

/* The interaction lists hold exactly the source boxes within the cut-off
 * of each target box, by the gap between cells, in the boxes' order: the
 * lists' walk over the sorted cells against a scan of every box pair, in
 * 1 to 6 dimensions, dense and sparse (sigma 1e-3: lone points), uniform
 * and clustered. */
START_TEST(test_lists_every_box_within_cutoff) {
  const int dims[] = {1, 2, 3, 6};
  const int dim = dims[_i / 2], kind = _i % 2;
  const size_t ns = 900, nt = 400;
  double *src = malloc(ns * dim * sizeof *src), *tgt = malloc(nt * dim * sizeof *tgt);
  fmmcl_test_cluster_points(kind, 31, ns, dim, src);
  fmmcl_test_cluster_points(kind, 32, nt, dim, tgt);
  const double sigmas[] = {0.3, 0.05, 1e-3};
  for (int si = 0; si < 3; si++) {
    double extent[FMMCL_MAX_DIM];
    for (int k = 0; k < dim; k++) extent[k] = 1 / (sqrt(2.0) * sigmas[si]);
    fmmcl_fgt_params par;
    ck_assert_int_eq(fmmcl_fgt_choose(NULL, dim, sigmas[si], 1e-6, 0, ns, extent, 0, &par), FMMCL_SUCCESS);
    fmmcl_fgt_setup s;
    ck_assert_int_eq(fmmcl_fgt_setup_build(NULL, &par, ns, src, nt, tgt, FMMCL_FGT_DIRECT, &s), FMMCL_SUCCESS);
    size_t listed = 0;
    for (size_t t = 0; t < s.tgt.nbox; t++) {
      size_t at = s.list_start[FMMCL_FGT_DIRECT][t];
      for (size_t b = 0; b < s.src.nbox; b++) {
        double g = 0;
        for (int k = 0; k < dim; k++) {
          const int64_t d = llabs(s.src.cell[b * dim + k] - s.tgt.cell[t * dim + k]);
          const double gk = d > 0 ? (double)(d - 1) * par.side : 0;
          g += gk * gk;
        }
        if (g > par.cutoff * par.cutoff) continue;
        ck_assert_msg(at < s.list_start[FMMCL_FGT_DIRECT][t + 1] && s.list[FMMCL_FGT_DIRECT][at] == b,
                      "d %d sigma %g: target box %zu misses source box %zu", dim, sigmas[si], t, b);
        at++;
      }
      ck_assert_uint_eq(at, s.list_start[FMMCL_FGT_DIRECT][t + 1]);
      listed += at - s.list_start[FMMCL_FGT_DIRECT][t];
    }
    if (si < 2) ck_assert_uint_gt(listed, 0); /* 1e-3 in 6 dimensions: no pair within reach */
    if (si == 2 && dim >= 3) ck_assert_uint_gt(s.src.nbox, ns / 2); /* the sparse grid */
    fmmcl_fgt_setup_free(&s);
  }
  free(src);
  free(tgt);
}
END_TEST

START_TEST(test_device_binning) {
  const int dims[] = {1, 3, 6};
  const int dim = dims[_i / 2], kind = _i % 2;
  const size_t ns = 1500, nt = 700;
  double *src = malloc(ns * dim * sizeof *src), *tgt = malloc(nt * dim * sizeof *tgt);
  fmmcl_test_cluster_points(kind, 27, ns, dim, src);
  fmmcl_test_cluster_points(kind, 28, nt, dim, tgt);
  const double sigmas[] = {dim == 6 ? 0.5 : 0.1 * dim, 1e-6};
  for (int si = 0; si < 2; si++) {
    double extent[FMMCL_MAX_DIM];
    for (int k = 0; k < dim; k++) extent[k] = 1 / (sqrt(2.0) * sigmas[si]);
    fmmcl_fgt_params par;
    ck_assert_int_eq(fmmcl_fgt_choose(NULL, dim, sigmas[si], 1e-6, 0, ns, extent, 0, &par), FMMCL_SUCCESS);
    fmmcl_fgt_setup host, dev;
    fmmcl_fgt_device_bins bins = {.real_size = 8};
    ck_assert_int_eq(fmmcl_fgt_setup_build(NULL, &par, ns, src, nt, tgt, FMMCL_FGT_AUTO, &host),
                     FMMCL_SUCCESS);
    fmmcl_status st = fmmcl_fgt_setup_build_device(ctx, &par, ns, src, nt, tgt, FMMCL_FGT_AUTO, &bins, &dev);
    ck_assert_msg(st == FMMCL_SUCCESS, "device binning: %s", fmmcl_last_error(ctx));
    same_boxes(&host.src, &dev.src, dim);
    same_boxes(&host.tgt, &dev.tgt, dim);
    /* the device's own copies: owner of each sorted point, starts */
    uint32_t *owner = malloc(nt * 4), *start = malloc((dev.src.nbox + 1) * 4);
    ck_assert_int_eq(
        clEnqueueReadBuffer(ctx->queue, bins.tgt.owner, CL_TRUE, 0, nt * 4, owner, 0, NULL, NULL), 0);
    ck_assert_int_eq(clEnqueueReadBuffer(ctx->queue, bins.src.start, CL_TRUE, 0, (dev.src.nbox + 1) * 4,
                                         start, 0, NULL, NULL),
                     0);
    for (size_t b = 0; b < dev.tgt.nbox; b++)
      for (size_t i = dev.tgt.start[b]; i < dev.tgt.start[b + 1]; i++) ck_assert_uint_eq(owner[i], b);
    for (size_t b = 0; b <= dev.src.nbox; b++) ck_assert_uint_eq(start[b], dev.src.start[b]);
    if (si == 1) ck_assert_uint_gt(dev.src.nbox, ns / 2); /* the sparse grid: mostly lone points */
    free(owner);
    free(start);
    fmmcl_fgt_device_set_release(&bins.src);
    fmmcl_fgt_device_set_release(&bins.tgt);
    fmmcl_fgt_setup_free(&host);
    fmmcl_fgt_setup_free(&dev);
  }
  free(src);
  free(tgt);
}
END_TEST

/* The whole FGT is unchanged by where the binning runs. */
START_TEST(test_device_binning_plan) {
  const size_t ns = 1000, nt = 500;
  const int dim = 3;
  double *src = malloc(ns * dim * sizeof *src), *tgt = malloc(nt * dim * sizeof *tgt);
  double *q = malloc(ns * sizeof *q), *a = malloc(nt * sizeof *a), *b = malloc(nt * sizeof *b);
  fmmcl_test_cluster_points(CLUSTERED, 17, ns, dim, src);
  fmmcl_test_cluster_points(CLUSTERED, 18, nt, dim, tgt);
  fmmcl_test_random_values(19, ns, -1, 1, q);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
  o.method = FMMCL_FGT;
  o.precision = FMMCL_DOUBLE;
  o.dim = dim;
  o.sigma = 0.3;
  o.gradient = 0;
  o.tolerance = 1e-8;
  for (int host = 0; host < 2; host++) {
    setenv("FMMCL_FGT_HOST_BINNING", host ? "1" : "0", 1);
    fmmcl_plan plan;
    fmmcl_status st = fmmcl_plan_create(ctx, &o, ns, src, nt, tgt, &plan);
    unsetenv("FMMCL_FGT_HOST_BINNING");
    ck_assert_msg(st == FMMCL_SUCCESS, "plan: %s", fmmcl_last_error(ctx));
    ck_assert_int_eq(fmmcl_plan_execute(plan, q, host ? b : a, NULL), FMMCL_SUCCESS);
    fmmcl_plan_destroy(plan);
  }
  ck_assert(memcmp(a, b, nt * sizeof *a) == 0);
  free(src);
  free(tgt);
  free(q);
  free(a);
  free(b);
}
END_TEST

static Suite *fgt_suite(void) {
  Suite *s = suite_create("fgt");
  TCase *ref = tcase_create("reference");
  tcase_add_test(ref, test_multi_index_order);
  tcase_add_test(ref, test_bound_falls_with_order);
  tcase_add_test(ref, test_tighter_bound);
  tcase_add_test(ref, test_bound_rigorous_1d);
  tcase_add_test(ref, test_reference_each_kind);
  tcase_add_test(ref, test_reference_error_falls);
  tcase_add_loop_test(ref, test_reference_tolerance, 0, 8);
  tcase_add_test(ref, test_reference_sigma_extremes);
  tcase_add_loop_test(ref, test_lists_every_box_within_cutoff, 0, 8);
  suite_add_tcase(s, ref);
  TCase *dev = tcase_create("device");
  tcase_add_checked_fixture(dev, setup, teardown);
  tcase_add_loop_test(dev, test_device_each_operator, 0, 10);
  tcase_add_loop_test(dev, test_device_coefficients, 0, 3);
  tcase_add_loop_test(dev, test_device_tolerance_double, 0, 8);
  tcase_add_test(dev, test_device_tolerance_single);
  tcase_add_test(dev, test_device_sigma_extremes);
  tcase_add_test(dev, test_device_plan_api);
  tcase_add_loop_test(dev, test_device_binning, 0, 6);
  tcase_add_test(dev, test_device_binning_plan);
  suite_add_tcase(s, dev);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(fgt_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
