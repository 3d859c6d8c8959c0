/* check_bbfmm.c — Check suite of the black-box Chebyshev FMM: the plain-C
 * reference against the direct sum (error falls with the order n for three
 * kernels), the SVD-compressed M2L against the dense one, the device plan
 * against the reference and the direct sum, user kernel strings. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "methods/bbfmm/bbfmm.h"
#include "core/internal.h"
#include "plan/registry.h" /* fmmcl_plan_runs */
#include "test_util.h"

/* The direct sum of a kernel with the bbFMM's r = 0 rule. */
static void direct_sum(const fmmcl_bbfmm_kfun *k, size_t ns, const double *src, const double *q, size_t nt,
                       const double *tgt, double *pot) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < nt; i++) {
    double f = 0;
    for (size_t j = 0; j < ns; j++)
      f += q[j] * fmmcl_bbfmm_kfun_eval(k, tgt[3 * i] - src[3 * j], tgt[3 * i + 1] - src[3 * j + 1],
                                        tgt[3 * i + 2] - src[3 * j + 2]);
    pot[i] = f;
  }
}

/* Relative l2 error of the host bbFMM (dense M2L when m2l is NULL). */
static double reference_error(const fmmcl_bbfmm_kfun *k, int n, int depth, size_t np, int compress) {
  double *x = malloc(3 * np * sizeof *x), *q = malloc(np * sizeof *q), *f = malloc(np * sizeof *f),
         *ref = malloc(np * sizeof *ref);
  fmmcl_test_random_points(7, np, 3, x);
  fmmcl_test_random_values(8, np, -1, 1, q);
  fmmcl_bbfmm_tree t;
  ck_assert_int_eq(fmmcl_bbfmm_tree_build(np, x, np, x, depth, 0, &t), FMMCL_SUCCESS);
  fmmcl_bbfmm_m2l *levels[11] = {0}, store[11];
  int n3 = n * n * n;
  if (compress) {
    double *kt = malloc((size_t)FMMCL_BBFMM_N_TRANSFER * n3 * n3 * sizeof *kt);
    for (int l = 2; l <= t.depth; l++) {
      double h = t.half / (1 << l);
      for (int i = 0; i < FMMCL_BBFMM_N_TRANSFER; i++)
        fmmcl_bbfmm_m2l_dense(k, n, h, i, kt + (size_t)i * n3 * n3);
      ck_assert_int_eq(fmmcl_bbfmm_m2l_compress(n, h, kt, fmmcl_bbfmm_svd_eps(n, FMMCL_DOUBLE), 1, &store[l]),
                       FMMCL_SUCCESS);
      levels[l] = &store[l];
    }
    free(kt);
  }
  ck_assert_int_eq(fmmcl_bbfmm_reference(k, n, &t, compress ? levels : NULL, q, f), FMMCL_SUCCESS);
  direct_sum(k, np, x, q, np, x, ref);
  double e = fmmcl_test_rel_l2(f, ref, np);
  for (int l = 2; l <= t.depth; l++)
    if (levels[l]) fmmcl_bbfmm_m2l_free(levels[l]);
  fmmcl_bbfmm_tree_free(&t);
  free(x), free(q), free(f), free(ref);
  return e;
}

/* ---- the plain-C reference ----------------------------------------------- */

static const fmmcl_bbfmm_kfun kernels[] = {
    {FMMCL_BBFMM_LAPLACE, 0, NULL},
    {FMMCL_BBFMM_GAUSSIAN, 0.3, NULL},
    {FMMCL_BBFMM_YUKAWA, 2.0, NULL},
    {FMMCL_BBFMM_INV_MULTIQUADRIC, 0.1, NULL},
};
static const char *kernel_names[] = {"1/r", "gaussian", "yukawa", "inverse multiquadric"};

/* Chebyshev interpolation of a smooth kernel converges geometrically in n:
 * the error must fall with every order from 3 to 8 (dense M2L, so the only
 * approximation is the interpolation). */
START_TEST(test_reference_error_falls_with_order) {
  const fmmcl_bbfmm_kfun *k = &kernels[_i];
  double prev = INFINITY, first = 0, e = 0;
  for (int n = 3; n <= 8; n++) {
    e = reference_error(k, n, 2, 1000, 0);
    printf("bbfmm reference %-22s n = %d  rel l2 error %.3e\n", kernel_names[_i], n, e);
    if (n == 3) first = e;
    ck_assert_msg(e < prev, "%s: error %g at n = %d does not fall below %g", kernel_names[_i], e, n, prev);
    prev = e;
  }
  ck_assert_msg(first < 5e-2, "%s: n = 3 error %g too large", kernel_names[_i], first);
  ck_assert_msg(e < first * 1e-3, "%s: n = 8 error %g not 1000x below n = 3's %g", kernel_names[_i], e,
                first);
}
END_TEST

/* The SVD-compressed M2L keeps singular values down to 10^-(n+1) of the
 * largest: it adds at most that much to the interpolation error. A deeper
 * tree (3 levels) also runs M2M and L2L. */
START_TEST(test_reference_compressed_matches_dense) {
  const fmmcl_bbfmm_kfun *k = &kernels[_i];
  for (int n = 3; n <= 4; n++) {
    double ed = reference_error(k, n, 3, 2000, 0), ec = reference_error(k, n, 3, 2000, 1);
    printf("bbfmm reference %-22s n = %d depth 3: dense %.3e  svd %.3e\n", kernel_names[_i], n, ed, ec);
    ck_assert_msg(ec < 1.5 * ed + 10 * fmmcl_bbfmm_svd_eps(n, FMMCL_DOUBLE),
                  "%s n = %d: compressed error %g vs dense %g", kernel_names[_i], n, ec, ed);
    ck_assert_msg(ed < 5e-2, "%s n = %d: depth-3 error %g", kernel_names[_i], n, ed);
  }
}
END_TEST

/* Chebyshev interpolation reproduces polynomials of degree < n exactly:
 * the weights sum to 1 and interpolate x^2 without error for n >= 3. */
START_TEST(test_chebyshev_weights) {
  for (int n = 3; n <= 10; n++) {
    double x[FMMCL_BBFMM_MAX_ORDER], w[FMMCL_BBFMM_MAX_ORDER];
    fmmcl_bbfmm_nodes(n, x);
    for (double p = -1; p <= 1; p += 0.125) {
      fmmcl_bbfmm_weights(n, p, w);
      double s = 0, s2 = 0;
      for (int m = 0; m < n; m++) s += w[m], s2 += w[m] * x[m] * x[m];
      ck_assert_double_eq_tol(s, 1, 1e-13);
      ck_assert_double_eq_tol(s2, p * p, 1e-13);
    }
  }
}
END_TEST

/* The 316 transfer vectors: index and vector are inverse, near ones have none. */
START_TEST(test_transfer_vectors) {
  for (int i = 0; i < FMMCL_BBFMM_N_TRANSFER; i++) {
    int t[3];
    fmmcl_bbfmm_transfer_vector(i, t);
    ck_assert(abs(t[0]) > 1 || abs(t[1]) > 1 || abs(t[2]) > 1);
    ck_assert_int_eq(fmmcl_bbfmm_transfer_index(t[0], t[1], t[2]), i);
  }
  ck_assert_int_eq(fmmcl_bbfmm_transfer_index(1, -1, 0), -1);
  ck_assert_int_eq(fmmcl_bbfmm_transfer_index(4, 0, 0), -1);
}
END_TEST

/* The eigen-decomposition: A v = lambda v, descending, orthonormal. */
START_TEST(test_symmetric_eigen) {
  int d = 40;
  double *a = malloc(d * d * sizeof *a), *a0 = malloc(d * d * sizeof *a0), *v = malloc(d * d * sizeof *v),
         w[40];
  fmmcl_test_random_values(3, d * d, -1, 1, a);
  for (int i = 0; i < d; i++)
    for (int j = 0; j < i; j++) a[i * d + j] = a[j * d + i];
  memcpy(a0, a, d * d * sizeof *a);
  ck_assert_int_eq(fmmcl_symmetric_eigen(d, a, w, v), 0);
  for (int j = 0; j < d; j++) {
    if (j) ck_assert(w[j] <= w[j - 1]);
    for (int k = 0; k <= j; k++) { /* orthonormal columns: A v = w v alone holds for v = 0 */
      double dot = 0;
      for (int i = 0; i < d; i++) dot += v[i * d + j] * v[i * d + k];
      ck_assert_double_eq_tol(dot, k == j ? 1.0 : 0.0, 1e-12);
    }
    for (int i = 0; i < d; i++) {
      double av = 0;
      for (int c = 0; c < d; c++) av += a0[i * d + c] * v[c * d + j];
      ck_assert_double_eq_tol(av, w[j] * v[i * d + j], 1e-10);
    }
  }
  free(a), free(a0), free(v);
}
END_TEST

/* ---- the device plan ------------------------------------------------------ */

static fmmcl_context ctx;
static void setup(void) {
  ctx = fmmcl_test_context();
  ck_assert_ptr_nonnull(ctx);
}
static void teardown(void) { fmmcl_context_destroy(ctx); }

typedef struct problem {
  size_t n;
  double *x, *q, *f, *ref;
} problem;

static problem make_problem(size_t n, unsigned seed) {
  problem p = {n, malloc(3 * n * sizeof(double)), malloc(n * sizeof(double)), malloc(n * sizeof(double)),
               malloc(n * sizeof(double))};
  fmmcl_test_random_points(seed, n, 3, p.x);
  fmmcl_test_random_values(seed + 1, n, -1, 1, p.q);
  return p;
}
static void free_problem(problem *p) { free(p->x), free(p->q), free(p->f), free(p->ref); }

static fmmcl_plan_options bb_options(fmmcl_bbfmm_kernel kind, double param, int order, fmmcl_precision prec) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_BBFMM;
  o.gradient = 0;
  o.bbfmm_kernel = kind;
  o.kernel_param = param;
  if (kind == FMMCL_BBFMM_GAUSSIAN) o.sigma = param;
  o.order = order;
  o.precision = prec;
  o.leaf_size = 8; /* 3000 points: depth 3, so M2M, L2L and two M2L levels run */
  return o;
}

static double device_error(const fmmcl_plan_options *o, const fmmcl_bbfmm_kfun *k, problem *p) {
  fmmcl_plan plan;
  fmmcl_status st = fmmcl_plan_create(ctx, o, p->n, p->x, 0, NULL, &plan);
  ck_assert_msg(st == FMMCL_SUCCESS, "plan: %s", fmmcl_last_error(ctx));
  st = fmmcl_plan_execute(plan, p->q, p->f, NULL);
  ck_assert_msg(st == FMMCL_SUCCESS, "execute: %s", fmmcl_last_error(ctx));
  fmmcl_plan_destroy(plan);
  direct_sum(k, p->n, p->x, p->q, p->n, p->x, p->ref);
  return fmmcl_test_rel_l2(p->f, p->ref, p->n);
}

/* In double precision the device runs the reference's algorithm: its error
 * against the direct sum is the reference's (dense M2L, depth 3) to within
 * the SVD truncation, for three kernels. */
START_TEST(test_device_double_vs_direct) {
  const fmmcl_bbfmm_kfun *k = &kernels[_i];
  problem p = make_problem(3000, 11);
  fmmcl_plan_options o = bb_options(k->kind, k->param, 4, FMMCL_DOUBLE);
  double e = device_error(&o, k, &p);
  fmmcl_bbfmm_tree t;
  fmmcl_bbfmm_tree_build(p.n, p.x, p.n, p.x, 3, 0, &t);
  double *f = malloc(p.n * sizeof *f);
  ck_assert_int_eq(fmmcl_bbfmm_reference(k, 4, &t, NULL, p.q, f), FMMCL_SUCCESS);
  double eref = fmmcl_test_rel_l2(f, p.ref, p.n), diff = fmmcl_test_rel_l2(p.f, f, p.n);
  printf("bbfmm device double %-22s n = 4: error %.3e (host reference %.3e, device - host %.3e)\n",
         kernel_names[_i], e, eref, diff);
  ck_assert_msg(diff < 10 * fmmcl_bbfmm_svd_eps(4, FMMCL_DOUBLE), "%s: device differs from host by %g",
                kernel_names[_i], diff);
  ck_assert_msg(e < 1.2 * eref + 10 * fmmcl_bbfmm_svd_eps(4, FMMCL_DOUBLE), "%s: device error %g vs host %g",
                kernel_names[_i], e, eref);
  free(f);
  fmmcl_bbfmm_tree_free(&t);
  free_problem(&p);
}
END_TEST

/* Operator by operator: the host reference run on the plan's own tree with
 * the plan's own M2L operators (read back from the device) must agree with
 * the device to rounding, at every stage: W at the leaves (P2M), W one level
 * up (M2M), L at level 2 (M2L alone), L at the leaves (M2L + L2L) and the
 * potentials (P2P + L2P). Gaussian: its operators differ per level. */
START_TEST(test_device_operators) {
  const fmmcl_bbfmm_kfun *k = &kernels[1];
  problem p = make_problem(3000, 11);
  fmmcl_plan_options o = bb_options(k->kind, k->param, 4, FMMCL_DOUBLE);
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, p.q, p.f, NULL), FMMCL_SUCCESS);
  const fmmcl_bbfmm_tree *t = fmmcl_bbfmm_plan_tree(plan);
  ck_assert_int_eq(t->depth, 3);
  fmmcl_bbfmm_m2l ops[4], *levels[11] = {0};
  double *w[11] = {0}, *l[11] = {0}, *dev = malloc(512 * 64 * sizeof *dev);
  for (int lev = 2; lev <= 3; lev++) {
    ck_assert_int_eq(fmmcl_bbfmm_debug_m2l(plan, lev, &ops[lev]), FMMCL_SUCCESS);
    levels[lev] = &ops[lev];
    w[lev] = malloc(((size_t)1 << (3 * lev)) * 64 * sizeof(double));
    l[lev] = malloc(((size_t)1 << (3 * lev)) * 64 * sizeof(double));
  }
  ck_assert_int_eq(fmmcl_bbfmm_reference_levels(k, 4, t, levels, p.q, p.ref, w, l), FMMCL_SUCCESS);
  const char *stage[2][4] = {{"", "", "M2M (W level 2)", "P2M (W level 3)"},
                             {"", "", "M2L (L level 2)", "M2L + L2L (L level 3)"}};
  for (int which = 0; which < 2; which++)
    for (int lev = 2; lev <= 3; lev++) {
      size_t cnt = ((size_t)1 << (3 * lev)) * 64;
      ck_assert_int_eq(fmmcl_bbfmm_debug_cells(plan, lev, which, dev), FMMCL_SUCCESS);
      double e = fmmcl_test_rel_l2(dev, which ? l[lev] : w[lev], cnt);
      printf("bbfmm device vs host %-22s rel diff %.2e\n", stage[which][lev], e);
      ck_assert_msg(e < 1e-12, "%s: device and host differ by %g", stage[which][lev], e);
    }
  double e = fmmcl_test_rel_l2(p.f, p.ref, p.n);
  printf("bbfmm device vs host P2P + L2P (potential) rel diff %.2e\n", e);
  ck_assert_msg(e < 1e-12, "potentials differ by %g", e);
  /* a plan executes again with the same answer: nothing left over from the
   * first run (locals, compressed accumulators) */
  double *again = malloc(p.n * sizeof *again);
  ck_assert_int_eq(fmmcl_plan_execute(plan, p.q, again, NULL), FMMCL_SUCCESS);
  ck_assert_double_eq_tol(fmmcl_test_rel_l2(again, p.f, p.n), 0, 1e-15);
  free(again);
  for (int lev = 2; lev <= 3; lev++) fmmcl_bbfmm_m2l_free(&ops[lev]), free(w[lev]), free(l[lev]);
  free(dev);
  fmmcl_plan_destroy(plan);
  free_problem(&p);
}
END_TEST

/* Targets apart from the sources (a box around both), and degenerate
 * inputs: one source, all points in one place. */
START_TEST(test_device_targets_and_degenerate) {
  fmmcl_bbfmm_kfun lap = {FMMCL_BBFMM_LAPLACE, 0, NULL};
  fmmcl_plan_options o = bb_options(FMMCL_BBFMM_LAPLACE, 0, 4, FMMCL_DOUBLE);
  size_t ns = 2000, nt = 1500;
  double *xs = malloc(3 * ns * sizeof *xs), *xt = malloc(3 * nt * sizeof *xt), *q = malloc(ns * sizeof *q),
         *f = malloc(nt * sizeof *f), *ref = malloc(nt * sizeof *ref);
  fmmcl_test_random_points(21, ns, 3, xs);
  fmmcl_test_random_points(22, nt, 3, xt);
  for (size_t i = 0; i < 3 * nt; i++) xt[i] = 0.5 + 1.5 * xt[i]; /* overlapping, larger box */
  fmmcl_test_random_values(23, ns, -1, 1, q);
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, ns, xs, nt, xt, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, f, NULL), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  direct_sum(&lap, ns, xs, q, nt, xt, ref);
  double e = fmmcl_test_rel_l2(f, ref, nt);
  printf("bbfmm device separate targets n = 4: error %.3e\n", e);
  ck_assert_msg(e < 1e-3, "separate targets: error %g", e);
  /* one source: its own potential is 0 (the r = 0 pair is skipped) */
  double x1[3] = {0.3, -2, 7}, q1 = 2, f1 = -1;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, 1, x1, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, &q1, &f1, NULL), FMMCL_SUCCESS);
  ck_assert_double_eq(f1, 0);
  fmmcl_plan_destroy(plan);
  /* 100 sources in one place and a target 1 away: 1/r sums to sum q, up to
   * order 4's interpolation error between two cell corners (~3e-3); the
   * point is a finite answer where the box would have no size */
  double *xc = malloc(3 * 100 * sizeof *xc), qc[100], tgt[3] = {1, 0, 0}, fc = 0, sum = 0;
  for (int i = 0; i < 100; i++) xc[3 * i] = xc[3 * i + 1] = xc[3 * i + 2] = 0, qc[i] = 0.01 * i, sum += qc[i];
  ck_assert_msg(fmmcl_plan_create(ctx, &o, 100, xc, 1, tgt, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, qc, &fc, NULL), FMMCL_SUCCESS);
  ck_assert_double_eq_tol(fc, sum, 1e-2 * sum);
  fmmcl_plan_destroy(plan);
  free(xs), free(xt), free(q), free(f), free(ref), free(xc);
}
END_TEST

/* Single precision: the order-5 interpolation error (~5e-5) dominates
 * float rounding (~1e-6). */
START_TEST(test_device_single) {
  const fmmcl_bbfmm_kfun *k = &kernels[0];
  problem p = make_problem(3000, 12);
  fmmcl_plan_options o = bb_options(k->kind, k->param, 5, FMMCL_SINGLE);
  double e = device_error(&o, k, &p);
  printf("bbfmm device single 1/r n = 5: error %.3e\n", e);
  ck_assert_msg(e < 1e-4, "single precision error %g", e);
  free_problem(&p);
}
END_TEST

/* A user kernel string: Yukawa written out has the error of the host
 * reference's built-in Yukawa (the third kernel of the device tests). */
START_TEST(test_user_kernel) {
  fmmcl_bbfmm_kfun yuk = {FMMCL_BBFMM_YUKAWA, 2.0, NULL};
  problem p = make_problem(3000, 13);
  fmmcl_plan_options o = bb_options(FMMCL_BBFMM_USER, 0, 4, FMMCL_DOUBLE);
  o.kernel_expression = "exp(-2 * r) / r";
  double e = device_error(&o, &yuk, &p);
  fmmcl_bbfmm_tree t;
  fmmcl_bbfmm_tree_build(p.n, p.x, p.n, p.x, 3, 0, &t);
  ck_assert_int_eq(fmmcl_bbfmm_reference(&yuk, 4, &t, NULL, p.q, p.f), FMMCL_SUCCESS);
  double eref = fmmcl_test_rel_l2(p.f, p.ref, p.n);
  printf("bbfmm device user kernel exp(-2 r)/r n = 4: error %.3e (host built-in Yukawa %.3e)\n", e, eref);
  ck_assert_msg(e < 1.2 * eref + 10 * fmmcl_bbfmm_svd_eps(4, FMMCL_DOUBLE), "user kernel error %g vs %g", e,
                eref);
  fmmcl_bbfmm_tree_free(&t);
  free_problem(&p);
}
END_TEST

/* A user kernel that does not compile: BUILD_FAILED, the log in the
 * context's last error, pointing at the expression. */
START_TEST(test_user_kernel_build_failure) {
  problem p = make_problem(200, 14);
  fmmcl_plan_options o = bb_options(FMMCL_BBFMM_USER, 0, 3, FMMCL_DOUBLE);
  o.kernel_expression = "exp(-r) / no_such_function(r)";
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan), FMMCL_ERROR_BUILD_FAILED);
  ck_assert_ptr_null(plan);
  const char *msg = fmmcl_last_error(ctx);
  ck_assert_msg(strstr(msg, "build log") && strstr(msg, "no_such_function"), "message: %s", msg);
  ck_assert_msg(strstr(msg, "kernel_expression"), "log does not name the expression: %s", msg);
  free_problem(&p);
}
END_TEST

/* Bad options: gradient (the bbFMM computes potentials), unknown kernel,
 * missing expression, order out of range, negative parameter. */
START_TEST(test_bad_options) {
  problem p = make_problem(100, 15);
  fmmcl_plan plan = NULL;
  fmmcl_plan_options o = bb_options(FMMCL_BBFMM_LAPLACE, 0, 3, FMMCL_DOUBLE);
  o.gradient = 1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  o = bb_options(FMMCL_BBFMM_USER, 0, 3, FMMCL_DOUBLE);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  o = bb_options((fmmcl_bbfmm_kernel)99, 0, 3, FMMCL_DOUBLE);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  o = bb_options(FMMCL_BBFMM_LAPLACE, 0, 11, FMMCL_DOUBLE);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  o = bb_options(FMMCL_BBFMM_YUKAWA, -1, 3, FMMCL_DOUBLE);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_null(plan);
  free_problem(&p);
}
END_TEST

/* The M2L operators go to the disk cache: a second plan loads them, and
 * one whose file was corrupted (a flipped byte, then a truncation) is
 * recomputed, never trusted, with the same result. */
START_TEST(test_svd_cache) {
  problem p = make_problem(3000, 16);
  fmmcl_plan_options o = bb_options(FMMCL_BBFMM_LAPLACE, 0, 4, FMMCL_DOUBLE);
  double *f0 = malloc(p.n * sizeof *f0);
  char path[4300];
  for (int round = 0; round < 5; round++) {
    fmmcl_plan plan;
    ck_assert_msg(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                  fmmcl_last_error(ctx));
    fmmcl_bbfmm_state *s = plan->impl;
    double h = s->tree.half / 4;
    uint64_t key = fmmcl_bbfmm_m2l_cache_key(s, h, fmmcl_bbfmm_svd_eps(4, FMMCL_DOUBLE));
    ck_assert_int_eq(fmmcl_cache_file_path(key, path, sizeof path), FMMCL_SUCCESS);
    if (round == 0) { /* start from nothing: whatever an earlier test left */
      fmmcl_plan_destroy(plan);
      unlink(path);
      continue;
    }
    ck_assert_int_eq(fmmcl_plan_execute(plan, p.q, p.f, NULL), FMMCL_SUCCESS);
    if (round == 1) {
      ck_assert_msg(!s->m2l_from_cache[2], "round 1: level 2 operators came from a deleted cache file");
      memcpy(f0, p.f, p.n * sizeof *f0);
    } else {
      ck_assert_msg(s->m2l_from_cache[2] == (round == 2), "round %d: from cache %d", round,
                    s->m2l_from_cache[2]);
      ck_assert_double_eq_tol(fmmcl_test_rel_l2(p.f, f0, p.n), 0, 1e-13);
    }
    fmmcl_plan_destroy(plan);
    FILE *fp = fopen(path, "r+b");
    ck_assert_ptr_nonnull(fp);
    if (round == 2) { /* flip a byte in the middle of the payload */
      fseek(fp, 0, SEEK_END);
      long len = ftell(fp);
      fseek(fp, len / 2, SEEK_SET);
      int c = fgetc(fp);
      fseek(fp, len / 2, SEEK_SET);
      fputc(c ^ 0x5a, fp);
      fclose(fp);
    } else {
      fclose(fp);
      if (round == 3) ck_assert_int_eq(truncate(path, 40), 0);
    }
  }
  free(f0);
  free_problem(&p);
}
END_TEST

/* CLBlast's statuses map to libfmmcl's, the message naming the call. */
START_TEST(test_clblast_status_mapping) {
  ck_assert_int_eq(fmmcl_clblast_status(ctx, 0, "x"), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_clblast_status(ctx, -1024, "CLBlastSgemm"), FMMCL_ERROR_UNSUPPORTED);
  ck_assert_msg(
      strstr(fmmcl_last_error(ctx), "CLBlastSgemm") && strstr(fmmcl_last_error(ctx), "CLBlastNotImplemented"),
      "%s", fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_clblast_status(ctx, -2044, "x"), FMMCL_ERROR_UNSUPPORTED); /* no double */
  ck_assert_int_eq(fmmcl_clblast_status(ctx, -1017, "x"), FMMCL_ERROR_INTERNAL);    /* bad dimension */
  ck_assert_int_eq(fmmcl_clblast_status(ctx, -2050, "x"), FMMCL_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(fmmcl_clblast_status(ctx, -11, "x"), FMMCL_ERROR_BUILD_FAILED);
  ck_assert_int_eq(fmmcl_clblast_status(ctx, -5, "x"), FMMCL_ERROR_OUT_OF_MEMORY); /* CL_OUT_OF_RESOURCES */
  ck_assert_int_eq(fmmcl_clblast_status(ctx, -2040, "x"), FMMCL_ERROR_OPENCL);
  /* and a real CLBlast call with an impossible size comes back as a status */
  cl_int err;
  cl_mem b = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, 64, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  ck_assert_int_eq(
      fmmcl_gemm(ctx, sizeof(double), 0, 100, 100, 100, b, 0, 100, b, 0, 100, 0.0, b, 0, 100, NULL),
      FMMCL_ERROR_INTERNAL);
  ck_assert_msg(strstr(fmmcl_last_error(ctx), "InsufficientMemory"), "%s", fmmcl_last_error(ctx));
  clReleaseMemObject(b);
}
END_TEST

/* DIRECT with a bbFMM function (bbfmm_direct.c): separate targets, the
 * r = 0 rule on coincident points, equal to the host's double sum. */
START_TEST(test_direct_bbfmm_kernel) {
  static const fmmcl_bbfmm_kfun yuk = {FMMCL_BBFMM_YUKAWA, 2.0, NULL};
  problem p = make_problem(700, 31);
  size_t nt = 130; /* two full work-groups and a partial one */
  double *xt = malloc(3 * nt * sizeof *xt), *f = malloc(nt * sizeof *f), *ref = malloc(nt * sizeof *ref);
  fmmcl_test_random_points(33, nt, 3, xt);
  memcpy(xt, p.x + 30, 3 * sizeof *xt); /* a target on a source: that pair is skipped */
  fmmcl_plan_options o = bb_options(FMMCL_BBFMM_YUKAWA, 2.0, 0, FMMCL_DOUBLE);
  o.method = FMMCL_DIRECT;
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, p.n, p.x, nt, xt, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, p.q, f, NULL), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  direct_sum(&yuk, p.n, p.x, p.q, nt, xt, ref);
  double e = fmmcl_test_rel_l2(f, ref, nt);
  ck_assert_msg(e < 1e-12 && isfinite(f[0]), "direct yukawa vs host: %g", e);
  o.gradient = 1; /* the bbFMM functions have no gradient */
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, p.n, p.x, nt, xt, &plan), FMMCL_ERROR_UNSUPPORTED);
  free(xt), free(f), free(ref);
  free_problem(&p);
}
END_TEST

/* The YUKAWA_3D plan kernel (bbfmm_kernel PLAN_KERNEL) sums the bbFMM's
 * Yukawa: against the device's direct sum of YUKAWA_3D (p2p_yukawa3d, in
 * double) its error is that of the host reference on the same tree, as in
 * test_device_double_vs_direct; that direct sum is the bbFMM's own function
 * to rounding. Softening (no bbFMM form), the gradient and a negative kappa
 * are refused. */
START_TEST(test_plan_kernel_yukawa3d) {
  static const fmmcl_bbfmm_kfun yuk = {FMMCL_BBFMM_YUKAWA, 2.0, NULL};
  problem p = make_problem(3000, 41);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_YUKAWA_3D);
  o.method = FMMCL_BBFMM;
  o.gradient = 0;
  o.kernel_param = 2.0;
  o.order = 4;
  o.precision = FMMCL_DOUBLE;
  o.leaf_size = 8; /* depth 3, as bb_options */
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert(fmmcl_plan_runs(plan, "bbfmm"));
  ck_assert_int_eq(fmmcl_plan_execute(plan, p.q, p.f, NULL), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  fmmcl_plan_options d = o;
  d.method = FMMCL_DIRECT;
  double *dev = malloc(p.n * sizeof *dev), *f = malloc(p.n * sizeof *f);
  ck_assert_msg(fmmcl_plan_create(ctx, &d, p.n, p.x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, p.q, dev, NULL), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  direct_sum(&yuk, p.n, p.x, p.q, p.n, p.x, p.ref);
  const double ed = fmmcl_test_rel_l2(dev, p.ref, p.n);
  ck_assert_msg(ed < 1e-12, "YUKAWA_3D direct sum vs the bbFMM's Yukawa: %g", ed);
  fmmcl_bbfmm_tree t;
  fmmcl_bbfmm_tree_build(p.n, p.x, p.n, p.x, 3, 0, &t);
  ck_assert_int_eq(fmmcl_bbfmm_reference(&yuk, 4, &t, NULL, p.q, f), FMMCL_SUCCESS);
  const double e = fmmcl_test_rel_l2(p.f, dev, p.n), eref = fmmcl_test_rel_l2(f, dev, p.n);
  printf("bbfmm device double yukawa3d plan kernel n = 4: error %.3e (host reference %.3e)\n", e, eref);
  ck_assert_msg(e < 1.2 * eref + 10 * fmmcl_bbfmm_svd_eps(4, FMMCL_DOUBLE),
                "yukawa3d: device error %g vs host %g", e, eref);
  fmmcl_bbfmm_tree_free(&t);
  o.softening = 0.1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  o.softening = 0;
  o.gradient = 1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  o.gradient = 0;
  o.kernel_param = -1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  free(dev), free(f);
  free_problem(&p);
}
END_TEST

/* ---- the adaptive tree ------------------------------------------------------- */

/* Clustered points: half on the unit sphere's surface, half in three tight
 * Gaussian blobs (sigma 0.01) off it; most of a uniform tree is empty. */
static void clustered_points(size_t n, unsigned seed, double *x) {
  fmmcl_test_random_points(seed, n, 3, x);
  static const double blob[3][3] = {{1.6, 0.2, 0.1}, {-0.3, 1.7, -0.4}, {0.2, -0.1, -1.8}};
  for (size_t i = 0; i < n; i++) {
    double *p = x + 3 * i, u = p[0], v = p[1], w = p[2];
    if (i % 2 == 0) { /* uniform on the sphere from two uniforms */
      double z = 2 * u - 1, phi = 6.283185307179586 * v, r = sqrt(1 - z * z);
      p[0] = r * cos(phi), p[1] = r * sin(phi), p[2] = z;
    } else { /* Box-Muller: a normal from (u, v), its partner from (v, w) */
      const double *c = blob[i / 2 % 3];
      double g[3] = {sqrt(-2 * log(u + 1e-300)) * cos(6.283185307179586 * v),
                     sqrt(-2 * log(v + 1e-300)) * sin(6.283185307179586 * w),
                     sqrt(-2 * log(w + 1e-300)) * cos(6.283185307179586 * u)};
      for (int d = 0; d < 3; d++) p[d] = c[d] + 0.01 * g[d];
    }
  }
}

/* Clustered input takes the adaptive path by default, with W and X lists;
 * in double the device equals the host's adaptive reference (dense M2L) to
 * within the SVD truncation, and both meet the order's accuracy against the
 * direct sum, for two kernels (1/r; Yukawa, whose operators differ per level). */
START_TEST(test_adaptive_clustered) {
  const fmmcl_bbfmm_kfun *k = &kernels[_i == 0 ? 0 : 2];
  problem p = make_problem(2500, 41);
  clustered_points(p.n, 43, p.x);
  fmmcl_plan_options o = bb_options(k->kind, k->param, 5, FMMCL_DOUBLE);
  o.leaf_size = 16;
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  size_t dev_lists[4], ref_lists[4];
  ck_assert_msg(fmmcl_bbfmm_plan_lists(plan, dev_lists), "clustered input did not take the adaptive tree");
  ck_assert_msg(fmmcl_plan_execute(plan, p.q, p.f, NULL) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
  fmmcl_plan_destroy(plan);
  double *f = malloc(p.n * sizeof *f);
  ck_assert_int_eq(fmmcl_bbfmm_adaptive_reference(k, 5, p.n, p.x, 0, NULL, 16, p.q, f, ref_lists),
                   FMMCL_SUCCESS);
  direct_sum(k, p.n, p.x, p.q, p.n, p.x, p.ref);
  double e = fmmcl_test_rel_l2(p.f, p.ref, p.n), eref = fmmcl_test_rel_l2(f, p.ref, p.n),
         diff = fmmcl_test_rel_l2(p.f, f, p.n);
  printf(
      "bbfmm adaptive %-10s n = 5: U %zu V %zu W %zu X %zu; error %.3e (host reference %.3e, device - host %.3e)\n",
      kernel_names[_i == 0 ? 0 : 2], dev_lists[0], dev_lists[1], dev_lists[2], dev_lists[3], e, eref, diff);
  for (int i = 0; i < 4; i++) ck_assert_uint_eq(dev_lists[i], ref_lists[i]);
  ck_assert_msg(dev_lists[1] > 0 && dev_lists[2] > 0 && dev_lists[3] > 0, "V, W or X list empty");
  ck_assert_msg(diff < 10 * fmmcl_bbfmm_svd_eps(5, FMMCL_DOUBLE), "device differs from host by %g", diff);
  ck_assert_msg(eref < 2e-4 && e < 2e-4, "errors %g (device) %g (host) above 2e-4 at n = 5", e, eref);
  free(f);
  free_problem(&p);
}
END_TEST

/* The adaptive path in single precision, and with targets apart from the
 * sources (a target set on a smaller sphere): float's accuracy at n = 4. */
START_TEST(test_adaptive_single_targets) {
  static const fmmcl_bbfmm_kfun lap = {FMMCL_BBFMM_LAPLACE, 0, NULL};
  problem p = make_problem(2000, 61);
  clustered_points(p.n, 63, p.x);
  size_t nt = 700;
  double *xt = malloc(3 * nt * sizeof *xt), *f = malloc(nt * sizeof *f), *ref = malloc(nt * sizeof *ref);
  clustered_points(nt, 65, xt);
  for (size_t i = 0; i < 3 * nt; i++) xt[i] *= 0.7;
  fmmcl_plan_options o = bb_options(FMMCL_BBFMM_LAPLACE, 0, 4, FMMCL_SINGLE);
  o.leaf_size = 16;
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, p.n, p.x, nt, xt, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  size_t lists[4];
  ck_assert(fmmcl_bbfmm_plan_lists(plan, lists));
  ck_assert_int_eq(fmmcl_plan_execute(plan, p.q, f, NULL), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  direct_sum(&lap, p.n, p.x, p.q, nt, xt, ref);
  double e = fmmcl_test_rel_l2(f, ref, nt);
  printf("bbfmm adaptive single, separate targets, n = 4: W %zu X %zu, error %.3e\n", lists[2], lists[3], e);
  ck_assert_msg(e < 2e-3, "error %g", e);
  free(xt), free(f), free(ref);
  free_problem(&p);
}
END_TEST

/* A user kernel that is not even in d (K(-d) != K(d): separate U and V
 * bases) on the adaptive tree, against the DIRECT plan of the same
 * expression (the host cannot evaluate it). */
START_TEST(test_adaptive_user_kernel) {
  problem p = make_problem(1500, 71);
  clustered_points(p.n, 73, p.x);
  fmmcl_plan_options o = bb_options(FMMCL_BBFMM_USER, 0, 5, FMMCL_DOUBLE);
  o.kernel_expression = "exp(-2 * r) / r + 0.1 * dx / (r2 + 1)";
  o.leaf_size = 16;
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  size_t lists[4];
  ck_assert(fmmcl_bbfmm_plan_lists(plan, lists));
  ck_assert_int_eq(fmmcl_plan_execute(plan, p.q, p.f, NULL), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  o.method = FMMCL_DIRECT;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, p.q, p.ref, NULL), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  double e = fmmcl_test_rel_l2(p.f, p.ref, p.n);
  printf("bbfmm adaptive user kernel (not even), n = 5: error %.3e\n", e);
  ck_assert_msg(e < 2e-4, "error %g", e);
  free_problem(&p);
}
END_TEST

/* Points that fill their box keep the uniform tree (its batched M2L). */
START_TEST(test_uniform_input_keeps_uniform_tree) {
  problem p = make_problem(3000, 51);
  fmmcl_plan_options o = bb_options(FMMCL_BBFMM_LAPLACE, 0, 3, FMMCL_SINGLE);
  fmmcl_plan plan;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, p.n, p.x, 0, NULL, &plan), FMMCL_SUCCESS);
  size_t lists[4];
  ck_assert_int_eq(fmmcl_bbfmm_plan_lists(plan, lists), 0);
  fmmcl_plan_destroy(plan);
  free_problem(&p);
}
END_TEST

static Suite *bbfmm_suite(void) {
  Suite *s = suite_create("bbfmm");
  TCase *tc = tcase_create("reference");
  tcase_add_test(tc, test_chebyshev_weights);
  tcase_add_test(tc, test_symmetric_eigen);
  tcase_add_test(tc, test_transfer_vectors);
  tcase_add_loop_test(tc, test_reference_error_falls_with_order, 0, 3);
  tcase_add_loop_test(tc, test_reference_compressed_matches_dense, 0, 3);
  suite_add_tcase(s, tc);
  tc = tcase_create("device");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_clblast_status_mapping);
  tcase_add_test(tc, test_bad_options);
  tcase_add_test(tc, test_user_kernel_build_failure);
  tcase_add_loop_test(tc, test_device_double_vs_direct, 0, 2); /* the third kernel: test_user_kernel */
  tcase_add_test(tc, test_device_operators);
  tcase_add_test(tc, test_device_targets_and_degenerate);
  tcase_add_test(tc, test_device_single);
  tcase_add_test(tc, test_user_kernel);
  tcase_add_test(tc, test_svd_cache);
  tcase_add_test(tc, test_direct_bbfmm_kernel);
  tcase_add_loop_test(tc, test_adaptive_clustered, 0, 2);
  tcase_add_test(tc, test_uniform_input_keeps_uniform_tree);
  tcase_add_test(tc, test_adaptive_single_targets);
  tcase_add_test(tc, test_adaptive_user_kernel);
  suite_add_tcase(s, tc);
  /* a plan kernel summed by the bbFMM (CK_RUN_CASE=plan_kernel runs it alone) */
  tc = tcase_create("plan_kernel");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_plan_kernel_yukawa3d);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  /* The host reference runs many short OpenMP loops; on a loaded machine
   * (the CI shares two cores) spinning idle threads cost 5x the work.
   * libgomp reads the policy at load, hence the re-exec. */
  if (!getenv("OMP_WAIT_POLICY") && argc >= 1) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);
  }
  SRunner *sr = srunner_create(bbfmm_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
