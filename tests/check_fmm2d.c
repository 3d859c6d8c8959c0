/* check_fmm2d.c — Check suite of the 2D Laplace kernel: the direct sum on
 * the device against the plain-C reference, the plain-C complex-series
 * operators against the direct sum, each device operator of the FMM against
 * its plain-C reference, whole FMM plans against the direct sum. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace2d/expansions2d.h"
#include "methods/laplace2d/fmm2d.h"
#include "test_util.h"

static fmmcl_context ctx;

static void setup(void) {
  ctx = fmmcl_test_context();
  ck_assert_ptr_nonnull(ctx);
}
static void teardown(void) { fmmcl_context_destroy(ctx); }

static int has_fp64(void) {
  fmmcl_device_info d;
  fmmcl_context_device(ctx, &d);
  return d.has_fp64;
}

/* ---- point sets ------------------------------------------------------------- */

static unsigned long long rng;
static double uniform(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

enum { UNIFORM, CLUSTERED, N_DIST };
static const char *dist_name[] = {"uniform square", "clustered"};

/* Clustered: five Gaussian blobs of widths 0.003-0.05 in the unit square,
 * so the uniform quadtree has leaves of very different counts (hundreds
 * of points in some, none in most) and long U-list sums. Both sets are
 * snapped to the grid of spacing 2^-20: relative to the tree's centre they
 * are then exact in float, so a float device sees the reference's input. */
static void make_points(int kind, size_t n, unsigned seed, double *x) {
  rng = 88172645463325252ULL ^ ((unsigned long long)seed * 2654435761ULL);
  static const double cx[5] = {0.2, 0.7, 0.75, 0.3, 0.52}, cy[5] = {0.3, 0.8, 0.25, 0.85, 0.5};
  static const double w[5] = {0.05, 0.02, 0.01, 0.003, 0.03};
  for (size_t i = 0; i < n; i++) {
    if (kind == UNIFORM) {
      x[2 * i] = uniform(), x[2 * i + 1] = uniform();
    } else {
      int b = (int)(uniform() * 5);
      double r = sqrt(-2 * log(uniform() + 1e-300)), a = 6.283185307179586 * uniform();
      x[2 * i] = cx[b] + w[b] * r * cos(a), x[2 * i + 1] = cy[b] + w[b] * r * sin(a);
    }
    for (int c = 0; c < 2; c++) x[2 * i + c] = ldexp(round(ldexp(x[2 * i + c], 20)), -20);
  }
}

static void make_charges(size_t n, unsigned seed, double *q) {
  rng = 0x9E3779B97F4A7C15ULL ^ seed;
  for (size_t i = 0; i < n; i++) q[i] = 2 * uniform() - 1;
}

static fmmcl_plan_options laplace2d(fmmcl_method method, fmmcl_precision precision, int order) {
  fmmcl_plan_options o;
  ck_assert_int_eq(fmmcl_plan_options_init(&o, FMMCL_LAPLACE_2D), FMMCL_SUCCESS);
  ck_assert_int_eq(o.dim, 2);
  o.method = method, o.precision = precision, o.order = order;
  return o;
}

typedef fmmcl_test_errors errors;

/* Relative L2 errors of a plan against the double reference (test_util). */
static errors plan_errors(const fmmcl_plan_options *o, size_t ns, const double *src, const double *q,
                          size_t nt, const double *tgt) {
  return fmmcl_test_plan_errors(ctx, o, ns, src, q, nt, tgt);
}

static errors dist_errors(int kind, size_t n, const fmmcl_plan_options *o) {
  double *x = malloc(2 * n * sizeof *x), *q = malloc(n * sizeof *q);
  make_points(kind, n, 1, x);
  make_charges(n, 2, q);
  errors e = plan_errors(o, n, x, q, 0, NULL);
  free(x), free(q);
  return e;
}

/* ---- the direct sum ------------------------------------------------------------ */

/* The reference against values worked by hand: two unit charges at distance
 * 2 (phi = -log 2 each, gradient -(t - s) / r^2), a third point on top of
 * the first that must contribute nothing to it. */
START_TEST(test_reference_two_points) {
  fmmcl_plan_options o = laplace2d(FMMCL_DIRECT, FMMCL_DOUBLE, 0);
  double x[6] = {0, 0, 2, 0, 0, 0}, q[3] = {1, 3, 0}, pot[3], grad[6];
  ck_assert_int_eq(fmmcl_reference_direct(&o, 3, x, q, 0, NULL, pot, grad), FMMCL_SUCCESS);
  ck_assert_double_eq_tol(pot[0], -3 * log(2.0), 1e-15);
  ck_assert_double_eq_tol(pot[1], -log(2.0), 1e-15);
  ck_assert_double_eq_tol(grad[0], 3 * 2 / 4.0, 1e-15); /* -(0 - 2) * 3 / 4 */
  ck_assert_double_eq_tol(grad[1], 0, 1e-15);
  ck_assert_double_eq_tol(grad[2], -2 / 4.0, 1e-15);
  /* softening: -0.5 log(r^2 + eps^2) */
  o.softening = 1;
  ck_assert_int_eq(fmmcl_reference_direct(&o, 3, x, q, 0, NULL, pot, grad), FMMCL_SUCCESS);
  ck_assert_double_eq_tol(pot[1], -0.5 * log(5.0), 1e-15);
  ck_assert_double_eq_tol(pot[0], -1.5 * log(5.0), 1e-15);
}
END_TEST

/* Device direct vs reference: float on grid points (exact in float), double
 * on any points; sources = targets (self pairs), separate targets, softening. */
START_TEST(test_direct_device) {
  const fmmcl_precision prec = _i ? FMMCL_DOUBLE : FMMCL_SINGLE;
  if (prec == FMMCL_DOUBLE && !has_fp64()) return;
  const double tol = prec == FMMCL_DOUBLE ? 1e-12 : 1e-5;
  const size_t n = 1000, m = 333;
  double *x = malloc(2 * n * sizeof *x), *y = malloc(2 * m * sizeof *y), *q = malloc(n * sizeof *q);
  fmmcl_test_grid_points(11, n, 2, x);
  fmmcl_test_grid_points(12, m, 2, y);
  make_charges(n, 13, q);
  fmmcl_plan_options o = laplace2d(FMMCL_DIRECT, prec, 0);
  errors e = plan_errors(&o, n, x, q, 0, NULL);
  ck_assert_msg(e.pot < tol && e.grad < tol, "%s self: pot %.2e grad %.2e", prec ? "double" : "float", e.pot,
                e.grad);
  e = plan_errors(&o, n, x, q, m, y);
  ck_assert_msg(e.pot < tol && e.grad < tol, "targets: pot %.2e grad %.2e", e.pot, e.grad);
  /* a target on a source: the pair is skipped, not inf */
  memcpy(y, x + 2 * 7, 2 * sizeof *y);
  e = plan_errors(&o, n, x, q, m, y);
  ck_assert_msg(e.pot < tol && e.grad < tol, "coincident: pot %.2e grad %.2e", e.pot, e.grad);
  o.softening = 0.01;
  e = plan_errors(&o, n, x, q, 0, NULL);
  ck_assert_msg(e.pot < tol && e.grad < tol, "softened: pot %.2e grad %.2e", e.pot, e.grad);
  free(x), free(y), free(q);
}
END_TEST

/* ---- plain-C operators against the direct sum ------------------------------- */

/* Sources in a cell of side r about c; the field at a target well outside
 * through P2M + M2P, P2M + M2M + M2P, P2M + M2L + L2P, and + L2L: each
 * error must fall geometrically with p. */
static void direct_field(size_t n, const double *s, const double *q, const double *t, double *out) {
  out[0] = out[1] = out[2] = 0;
  for (size_t j = 0; j < n; j++) {
    double dx = t[0] - s[2 * j], dy = t[1] - s[2 * j + 1], r2 = dx * dx + dy * dy;
    out[0] -= 0.5 * q[j] * log(r2), out[1] -= q[j] * dx / r2, out[2] -= q[j] * dy / r2;
  }
}

static double field_err(const double *a, const double *b) {
  return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2])) /
         sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
}

START_TEST(test_reference_operators) {
  enum { N = 40 };
  double s[2 * N], q[N];
  rng = 77;
  const double cs[2] = {0.5, 0.5}, r = 1.0, cp[2] = {1.0, 1.0},
               rp = 2.0; /* parent: child is its lower-left */
  for (int j = 0; j < N; j++) s[2 * j] = uniform(), s[2 * j + 1] = uniform(), q[j] = 2 * uniform() - 1;
  /* local cell: side 1 centred 3 sides to the right; its child of side 1/2 */
  const double ct[2] = {3.5, 0.5}, cc[2] = {3.25, 0.75}, t[2] = {3.3, 0.9};
  double ref[3];
  direct_field(N, s, q, t, ref);
  double prev[4] = {1, 1, 1, 1};
  for (int p = 4; p <= 24; p += 4) {
    double complex M[41] = {0}, Mp[41] = {0}, L[41] = {0}, Lc[41] = {0};
    double o[4][3] = {{0}};
    fmmcl_exp2d_p2m(p, N, s, q, cs, r, M);
    fmmcl_exp2d_m2p(p, M, cs, r, t, o[0]);
    fmmcl_exp2d_m2m(p, M, cs, r, cp, rp, Mp);
    fmmcl_exp2d_m2p(p, Mp, cp, rp, t, o[1]);
    fmmcl_exp2d_m2l(p, M, cs, ct, r, L);
    fmmcl_exp2d_l2p(p, L, ct, r, t, o[2]);
    fmmcl_exp2d_l2l(p, L, ct, r, cc, 0.5 * r, Lc);
    fmmcl_exp2d_l2p(p, Lc, cc, 0.5 * r, t, o[3]);
    for (int k = 0; k < 4; k++) {
      double e = field_err(o[k], ref);
      /* the ratio of radii is at most 0.5 to 0.75 here: at least a factor 2 per 4 orders */
      ck_assert_msg(e < 0.5 * prev[k] || e < 1e-13, "operator chain %d, p = %d: error %.2e after %.2e", k, p,
                    e, prev[k]);
      prev[k] = e;
    }
  }
  for (int k = 0; k < 4; k++) ck_assert_msg(prev[k] < 1e-6, "chain %d at p = 24: %.2e", k, prev[k]);
}
END_TEST

/* The host FMM (all phases in C) against the direct sum. */
START_TEST(test_reference_fmm) {
  const size_t n = 3000;
  double *x = malloc(2 * n * sizeof *x), *q = malloc(n * sizeof *q);
  double *pot = malloc(n * sizeof *pot), *rpot = malloc(n * sizeof *rpot);
  make_points(_i, n, 5, x);
  make_charges(n, 6, q);
  fmmcl_plan_options o = laplace2d(FMMCL_DIRECT, FMMCL_DOUBLE, 0);
  ck_assert_int_eq(fmmcl_reference_direct(&o, n, x, q, 0, NULL, rpot, NULL), FMMCL_SUCCESS);
  double prev = 1;
  for (int p = 4; p <= 20; p += 8) {
    ck_assert_int_eq(fmmcl_fmm2d_reference(n, x, q, 0, NULL, p, 32, pot, NULL), FMMCL_SUCCESS);
    double e = fmmcl_test_rel_l2(pot, rpot, n);
    ck_assert_msg(e < 0.1 * prev, "%s p = %d: %.2e after %.2e", dist_name[_i], p, e, prev);
    prev = e;
  }
  ck_assert_msg(prev < 1e-6, "%s p = 20: %.2e", dist_name[_i], prev);
  free(x), free(q), free(pot), free(rpot);
}
END_TEST

/* ---- each device operator against its plain-C reference ---------------------- */

typedef struct op_fixture {
  fmmcl_plan plan;
  const fmmcl_quadtree2d *t;
  int p;
  size_t ne, no; /* coefficients of all cells; 3 per target */
  double *q, *qs;
  double complex *M, *L, *Mr, *Lr;
  double *out, *outr;
} op_fixture;

static void op_open(op_fixture *f, fmmcl_precision prec, int kind) {
  memset(f, 0, sizeof *f);
  const size_t n = 1500;
  double *x = malloc(2 * n * sizeof *x);
  f->q = malloc(n * sizeof *f->q);
  make_points(kind, n, 3, x);
  make_charges(n, 4, f->q);
  /* orders other tests build too (the float and 1e-6 double tolerance
   * rules): PoCL's kernel builds are most of this suite's cold time */
  const int order = prec == FMMCL_DOUBLE ? 14 : 9;
  fmmcl_plan_options o = laplace2d(FMMCL_FMM, prec, order);
  o.leaf_size = 16;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &f->plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  free(x);
  ck_assert_int_eq(fmmcl_fmm2d_debug_tree(f->plan, &f->t, &f->p), FMMCL_SUCCESS);
  ck_assert_int_eq(f->p, order);
  ck_assert_int_ge(f->t->levels, 3);
  f->ne = f->t->n_cells * (size_t)(f->p + 1), f->no = 3 * f->t->n_targets;
  f->qs = malloc(n * sizeof *f->qs);
  for (size_t i = 0; i < n; i++) f->qs[i] = f->q[f->t->source_perm[i]];
  f->M = calloc(f->ne, sizeof *f->M), f->L = calloc(f->ne, sizeof *f->L);
  f->Mr = calloc(f->ne, sizeof *f->Mr), f->Lr = calloc(f->ne, sizeof *f->Lr);
  f->out = calloc(f->no, sizeof *f->out), f->outr = calloc(f->no, sizeof *f->outr);
}

static void op_close(op_fixture *f) {
  fmmcl_plan_destroy(f->plan);
  free(f->q), free(f->qs), free(f->M), free(f->L), free(f->Mr), free(f->Lr), free(f->out), free(f->outr);
}

/* Relative L2 distance of complex arrays over cells first..last-1. */
static double cells_err(const op_fixture *f, const double complex *a, const double complex *b, size_t first,
                        size_t last) {
  double num = 0, den = 0;
  for (size_t i = first * (f->p + 1); i < last * (size_t)(f->p + 1); i++)
    num += cabs(a[i] - b[i]) * cabs(a[i] - b[i]), den += cabs(b[i]) * cabs(b[i]);
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* The device skips cells without targets in L2L (their L is never read):
 * clear those cells of both before comparing. */
static void drop_empty_targets(const op_fixture *f, double complex *L, double complex *Lr) {
  for (int l = 2; l <= f->t->levels; l++) {
    const size_t off = fmmcl_quadtree2d_level_offset(l), n = (size_t)1 << (2 * l);
    for (size_t m = 0; m < n; m++)
      if (fmmcl_quadtree2d_cell_targets(f->t, l, m) == 0)
        for (int k = 0; k <= f->p; k++) L[(off + m) * (f->p + 1) + k] = Lr[(off + m) * (f->p + 1) + k] = 0;
  }
}

static double op_tol(fmmcl_precision prec) { return prec == FMMCL_DOUBLE ? 1e-12 : 2e-5; }

START_TEST(test_operators) {
  const fmmcl_precision prec = _i / 2 ? FMMCL_DOUBLE : FMMCL_SINGLE;
  const int kind = _i % 2;
  if (prec == FMMCL_DOUBLE && !has_fp64()) return;
  op_fixture f;
  op_open(&f, prec, kind);
  const fmmcl_quadtree2d *t = f.t;
  const int L = t->levels;
  const size_t leaf0 = fmmcl_quadtree2d_level_offset(L), lev2 = fmmcl_quadtree2d_level_offset(2);
  const double tol = op_tol(prec);
  /* P2M: the leaves */
  ck_assert_int_eq(fmmcl_fmm2d_debug_run(f.plan, f.q, FMMCL_PHASE_P2M, NULL, NULL, f.M, NULL, NULL),
                   FMMCL_SUCCESS);
  fmmcl_fmm2d_ref_p2m(t, f.p, f.qs, f.Mr);
  double e = cells_err(&f, f.M, f.Mr, leaf0, t->n_cells);
  ck_assert_msg(e < tol, "%s %s P2M: %.2e", dist_name[kind], prec ? "double" : "float", e);
  /* M2M from the reference leaves: levels 2..L-1 */
  ck_assert_int_eq(fmmcl_fmm2d_debug_run(f.plan, NULL, FMMCL_PHASE_M2M, f.Mr, NULL, f.M, NULL, NULL),
                   FMMCL_SUCCESS);
  fmmcl_fmm2d_ref_m2m(t, f.p, f.Mr);
  e = cells_err(&f, f.M, f.Mr, lev2, leaf0);
  ck_assert_msg(e < tol, "M2M: %.2e", e);
  /* M2L with the row-traversal kernel and the reduction, all levels */
  ck_assert_int_eq(fmmcl_fmm2d_debug_run(f.plan, NULL, FMMCL_PHASE_M2L, f.Mr, NULL, NULL, f.L, NULL),
                   FMMCL_SUCCESS);
  fmmcl_fmm2d_ref_m2l(t, f.p, f.Mr, f.Lr);
  e = cells_err(&f, f.L, f.Lr, lev2, t->n_cells);
  ck_assert_msg(e < tol, "M2L: %.2e", e);
  /* L2L from the reference M2L results */
  ck_assert_int_eq(fmmcl_fmm2d_debug_run(f.plan, NULL, FMMCL_PHASE_L2L, NULL, f.Lr, NULL, f.L, NULL),
                   FMMCL_SUCCESS);
  fmmcl_fmm2d_ref_l2l(t, f.p, f.Lr);
  drop_empty_targets(&f, f.L, f.Lr);
  e = cells_err(&f, f.L, f.Lr, lev2, t->n_cells);
  ck_assert_msg(e < tol, "L2L: %.2e", e);
  /* L2P from the reference leaf locals */
  ck_assert_int_eq(fmmcl_fmm2d_debug_run(f.plan, NULL, FMMCL_PHASE_L2P, NULL, f.Lr, NULL, NULL, f.out),
                   FMMCL_SUCCESS);
  fmmcl_fmm2d_ref_l2p(t, f.p, f.Lr, f.outr);
  e = fmmcl_test_rel_l2(f.out, f.outr, f.no);
  ck_assert_msg(e < tol, "L2P: %.2e", e);
  /* P2P over the U lists */
  ck_assert_int_eq(fmmcl_fmm2d_debug_run(f.plan, NULL, FMMCL_PHASE_P2P, NULL, NULL, NULL, NULL, f.out),
                   FMMCL_SUCCESS);
  memset(f.outr, 0, f.no * sizeof *f.outr);
  fmmcl_fmm2d_ref_p2p(t, f.qs, f.outr);
  e = fmmcl_test_rel_l2(f.out, f.outr, f.no);
  ck_assert_msg(e < (prec == FMMCL_DOUBLE ? 1e-12 : 1e-5), "P2P: %.2e", e);
  op_close(&f);
}
END_TEST

/* The M2L kernel under other tilings: groups of one translation (WGS below
 * NROW), odd group sizes that leave a partial last group, several rounds
 * per work-item, partial unroll, both sources of the row coefficients, and
 * the variant with the reduction fused in (rows of unequal list lengths in
 * one group, a partial last group), and the shared-w variants (bundles of
 * TPW translations of one offset, padded; fused: bundles of TPW cells of
 * one position, edge cells with missing offsets, padded bundles), with
 * slots of one translation and partial groups; float (p = 9, NROW even)
 * and double (p = 14, NROW odd: the padded factor); m2l2d_tile (dense:
 * tiles of 2 x 2 cells with 5 work-items per cell sharing the 27 offsets
 * unevenly, and of 8 x 8, partial on levels 2 and 3; edges of
 * the domain, cells without sources). The GPU default's
 * choices (TPW by the driver, both kernels) are test_gpu_default_m2l's. */
START_TEST(test_m2l_tilings) {
  static const char *const defs[] = {"-DWGS=5 -DTPW=3 -DUNROLL=1 -DM2L_COEF=1",
                                     "-DWGS=37 -DTPW=1 -DUNROLL=3 -DM2L_COEF=0",
                                     "-DWGS=250 -DTPW=4 -DUNROLL=11 -DM2L_COEF=1",
                                     "-DWGS=37 -DTPW=1 -DUNROLL=3 -DM2L_COEF=0 -DM2L_FUSED=1",
                                     "-DWGS=128 -DTPW=8 -DM2L_COEF=1 -DM2L_FUSED=1",
                                     "-DWGS=5 -DTPW=3 -DUNROLL=2 -DM2L_COEF=1 -DM2L_SHARE_W=1",
                                     "-DWGS=37 -DTPW=5 -DUNROLL=3 -DM2L_COEF=0 -DM2L_SHARE_W=1 -DM2L_FUSED=1",
                                     "-DM2L_TILE=2 -DM2L_TILE_SPLIT=5 -DM2L_FUSED=1 -DM2L_SHARE_W=1",
                                     "-DWGS=64 -DM2L_TILE=8 -DM2L_FUSED=1"};
  const fmmcl_precision prec = _i ? FMMCL_DOUBLE : FMMCL_SINGLE;
  if (prec == FMMCL_DOUBLE && !has_fp64()) return;
  for (int d = 0; d < (int)(sizeof defs / sizeof defs[0]); d++) {
    ck_assert_int_eq(fmmcl_context_override_defines(ctx, "m2l2d", defs[d]), FMMCL_SUCCESS);
    op_fixture f;
    op_open(&f, prec, CLUSTERED);
    for (size_t i = 0; i < f.ne; i++) f.Mr[i] = cos(0.1 * i) + I * sin(0.37 * i) * (i % (f.p + 1) != 0);
    /* a cell without sources has no multipole (the device skips it) */
    for (int l = 2; l <= f.t->levels; l++)
      for (size_t m = 0; m < ((size_t)1 << (2 * l)); m++)
        if (fmmcl_quadtree2d_cell_sources(f.t, l, m) == 0)
          for (int k = 0; k <= f.p; k++) f.Mr[(fmmcl_quadtree2d_level_offset(l) + m) * (f.p + 1) + k] = 0;
    ck_assert_int_eq(fmmcl_fmm2d_debug_run(f.plan, f.q, FMMCL_PHASE_M2L, f.Mr, NULL, NULL, f.L, NULL),
                     FMMCL_SUCCESS);
    fmmcl_fmm2d_ref_m2l(f.t, f.p, f.Mr, f.Lr);
    drop_empty_targets(&f, f.L, f.Lr); /* the tile kernel gives them an L too, which nothing reads */
    double e = cells_err(&f, f.L, f.Lr, fmmcl_quadtree2d_level_offset(2), f.t->n_cells);
    ck_assert_msg(e < op_tol(prec), "M2L with %s: %.2e", defs[d], e);
    op_close(&f);
  }
}
END_TEST

/* The tile kernel's list: with the lists, exactly the tiles that hold a
 * cell with a non-empty V list (clustered points: fewer than all); without,
 * every tile of every level, each once. */
START_TEST(test_tile_list) {
  op_fixture f;
  op_open(&f, FMMCL_SINGLE, CLUSTERED);
  const fmmcl_quadtree2d *t = f.t;
  for (size_t tb = 1; tb <= 8; tb *= 2) {
    cl_uint *all, *list;
    size_t n_all, n;
    ck_assert_int_eq(fmmcl_m2l2d_tile_list(t->levels, tb, NULL, &all, &n_all), FMMCL_SUCCESS);
    ck_assert_int_eq(fmmcl_m2l2d_tile_list(t->levels, tb, t->v_begin, &list, &n), FMMCL_SUCCESS);
    ck_assert_uint_eq(n_all, fmmcl_m2l2d_tile_groups(t->levels, tb));
    ck_assert_msg(n > 0 && n < n_all, "tb %zu: %zu of %zu tiles listed", tb, n, n_all);
    size_t k = 0;
    for (int l = 2; l <= t->levels; l++) {
      const size_t d = (size_t)1 << l, side = d > tb ? d / tb : 1, off = fmmcl_quadtree2d_level_offset(l);
      for (size_t i = 0; i < side * side; i++) {
        ck_assert_uint_eq(all[k++], (cl_uint)((unsigned)l << FMMCL_M2L2D_TILE_LEVEL_SHIFT | i));
        int has = 0; /* a cell of tile i with a V list */
        for (size_t m = 0; m < d * d; m++) {
          size_t x, y;
          fmmcl_quadtree2d_cell_xy(m, &x, &y);
          if ((y / tb) * side + x / tb == i && t->v_begin[off + m + 1] > t->v_begin[off + m]) has = 1;
        }
        int listed = 0;
        for (size_t j = 0; j < n; j++)
          listed |= list[j] == (cl_uint)((unsigned)l << FMMCL_M2L2D_TILE_LEVEL_SHIFT | i);
        ck_assert_msg(has == listed, "tb %zu level %d tile %zu: has a list %d, listed %d", tb, l, i, has,
                      listed);
      }
    }
    free(all), free(list);
  }
  op_close(&f);
}
END_TEST

/* ---- whole plans against the direct sum ----------------------------------------- */

/* Error falls with p: by at least 10x per step of 7-8 orders (measured
 * ~0.39 per order, ~1e-3 per step; even the worst pair's bound 0.55 per
 * order gives ~1e-2) and stays under the model
 * that picks p from a tolerance. The orders are those the tolerance rule
 * builds (6, 14, 21), which keeps PoCL's kernel builds, most of this
 * suite's cold time, down. */
START_TEST(test_error_falls_with_order) {
  if (!has_fp64()) return;
  static const int orders[] = {6, 14, 21};
  double prev = 1;
  for (int i = 0; i < 3; i++) {
    const int p = orders[i];
    fmmcl_plan_options o = laplace2d(FMMCL_FMM, FMMCL_DOUBLE, p);
    o.leaf_size = 32;
    errors e = dist_errors(_i, 2500, &o);
    ck_assert_msg(e.pot < 0.1 * prev, "%s p = %d: %.2e after %.2e", dist_name[_i], p, e.pot, prev);
    const double model = fmmcl_fmm2d_predicted_error(p);
    ck_assert_msg(e.pot <= model && e.grad <= model, "%s p = %d: pot %.2e grad %.2e above the model %.2e",
                  dist_name[_i], p, e.pot, e.grad, model);
    prev = e.pot;
  }
}
END_TEST

/* The order chosen from a tolerance meets it (double 1e-3..1e-9, float 1e-4;
 * the float gradient of close pairs is limited by rounding, hence 10x). */
START_TEST(test_tolerance) {
  static const double tols[] = {1e-3, 1e-6, 1e-9};
  for (int k = 0; k < 3 && has_fp64(); k++) {
    fmmcl_plan_options o = laplace2d(FMMCL_FMM, FMMCL_DOUBLE, 0);
    o.tolerance = tols[k]; /* default leaf: the depth by cost */
    errors e = dist_errors(_i, 3000, &o);
    ck_assert_msg(e.pot <= tols[k] && e.grad <= tols[k], "%s tol %.0e: pot %.2e grad %.2e", dist_name[_i],
                  tols[k], e.pot, e.grad);
  }
  fmmcl_plan_options o = laplace2d(FMMCL_FMM, FMMCL_SINGLE, 0);
  o.tolerance = 1e-4;
  errors e = dist_errors(_i, 3000, &o);
  ck_assert_msg(e.pot <= 1e-4 && e.grad <= 1e-3, "%s float tol 1e-4: pot %.2e grad %.2e", dist_name[_i],
                e.pot, e.grad);
}
END_TEST

/* Whole plans with the GPUs' default M2L (m2l2d_tile where the lists are
 * at least half full, the separate shared-w kernel where not, its TPW by
 * the driver) meet the tolerance on both point sets, and the choice goes
 * as meant: the tile kernel for the uniform square, separate for the
 * clustered set (PoCL plans otherwise run the CPU default). */
START_TEST(test_gpu_default_m2l) {
  const fmmcl_precision prec = has_fp64() ? FMMCL_DOUBLE : FMMCL_SINGLE;
  const double tol = prec == FMMCL_DOUBLE ? 1e-6 : 1e-4;
  ck_assert_int_eq(
      fmmcl_context_override_defines(ctx, "m2l2d",
                                     "-DWGS=128 -DM2L_COEF=1 -DM2L_FUSED=2 -DM2L_SHARE_W=1 -DM2L_TILE=8 "
                                     "-DM2L_SEPARATE_TPW=8"),
      FMMCL_SUCCESS);
  for (int kind = 0; kind < N_DIST; kind++) {
    fmmcl_plan_options o = laplace2d(FMMCL_FMM, prec, 0);
    o.tolerance = tol;
    errors e = dist_errors(kind, 3000, &o);
    ck_assert_msg(e.pot <= tol && e.grad <= 10 * tol, "%s: pot %.2e grad %.2e", dist_name[kind], e.pot,
                  e.grad);
    double *x = malloc(2 * 3000 * sizeof *x);
    make_points(kind, 3000, 1, x);
    fmmcl_plan plan;
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3000, x, 0, NULL, &plan), FMMCL_SUCCESS);
    char opts[1024];
    ck_assert_int_eq(fmmcl_plan_build_options(plan, opts, sizeof opts), FMMCL_SUCCESS);
    /* fused or separate is the host's choice (M2L_FUSED never reaches the
     * compiler): the separate kernel leaves its reduction in the timings */
    double *q = malloc(3000 * sizeof *q), *pot = malloc(3000 * sizeof *pot);
    for (int i = 0; i < 3000; i++) q[i] = 1.0 / (1 + i % 7);
    ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
    fmmcl_phase_time t[FMMCL_MAX_PHASES];
    size_t nt = 0;
    int reduce = 0;
    ck_assert_int_eq(fmmcl_plan_timings(plan, t, FMMCL_MAX_PHASES, &nt), FMMCL_SUCCESS);
    for (size_t i = 0; i < nt && i < FMMCL_MAX_PHASES; i++) reduce |= strcmp(t[i].name, "m2l_reduce") == 0;
    free(q), free(pot);
    const int tile = strstr(opts, "-DM2L_TILE=8") && !strstr(opts, "-DTPW=") && !reduce;
    const int separate = strstr(opts, "-DM2L_TILE=0") && strstr(opts, "-DTPW=") && reduce;
    ck_assert_msg(!strstr(opts, "M2L_FUSED"), "%s", opts);
    ck_assert_msg(kind == UNIFORM ? tile : separate, "%s: %s", dist_name[kind], opts);
    fmmcl_plan_destroy(plan);
    free(x);
  }
}
END_TEST

/* Separate targets, some outside the sources' box, one on a source;
 * a second execute with new charges; counts. */
START_TEST(test_targets_and_reuse) {
  const size_t n = 2000, m = 700;
  const fmmcl_precision prec = has_fp64() ? FMMCL_DOUBLE : FMMCL_SINGLE;
  double *x = malloc(2 * n * sizeof *x), *y = malloc(2 * m * sizeof *y), *q = malloc(n * sizeof *q);
  make_points(UNIFORM, n, 8, x);
  make_points(CLUSTERED, m, 9, y);
  for (size_t i = 0; i < 2 * m; i++) y[i] = 1.4 * y[i] - 0.2;
  y[0] = x[10], y[1] = x[11];
  make_charges(n, 10, q);
  fmmcl_plan_options o = laplace2d(FMMCL_FMM, prec, 14);
  errors e = plan_errors(&o, n, x, q, m, y);
  ck_assert_msg(e.pot < 1e-4 && e.grad < 1e-3, "targets: pot %.2e grad %.2e", e.pot, e.grad);
  fmmcl_plan plan;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, m, y, &plan), FMMCL_SUCCESS);
  double *pot = malloc(m * sizeof *pot), *rpot = malloc(m * sizeof *rpot);
  for (int rep = 0; rep < 2; rep++) {
    make_charges(n, 20 + rep, q);
    ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
    ck_assert_int_eq(fmmcl_reference_direct(&o, n, x, q, m, y, rpot, NULL), FMMCL_SUCCESS);
    ck_assert_double_lt(fmmcl_test_rel_l2(pot, rpot, m), 1e-4);
  }
  double w;
  ck_assert_int_eq(fmmcl_plan_counts(plan, "p2m", &w), FMMCL_SUCCESS);
  ck_assert_double_eq(w, (double)n);
  ck_assert_int_eq(fmmcl_plan_counts(plan, "m2l", &w), FMMCL_SUCCESS);
  ck_assert_double_gt(w, 0);
  ck_assert_int_eq(fmmcl_plan_counts(plan, "p2p", &w), FMMCL_SUCCESS);
  ck_assert(w > 0 && w < (double)n * m);
  fmmcl_plan_destroy(plan);
  free(x), free(y), free(q), free(pot), free(rpot);
}
END_TEST

/* Depth: --leaf q fixes the level (about q points per leaf); by default
 * the clustered set goes deeper than the uniform one of the same size, and
 * its near field shrinks for it. */
START_TEST(test_depth_rule) {
  const size_t n = 3000;
  double *x = malloc(2 * n * sizeof *x);
  int levels[N_DIST];
  double pairs[N_DIST];
  for (int kind = 0; kind < N_DIST; kind++) {
    make_points(kind, n, 40, x);
    fmmcl_plan_options o = laplace2d(FMMCL_FMM, FMMCL_SINGLE, 9);
    fmmcl_plan plan;
    const fmmcl_quadtree2d *t;
    int p;
    o.leaf_size = 47; /* 3000 <= 47 * 4^3 */
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
    ck_assert_int_eq(fmmcl_fmm2d_debug_tree(plan, &t, &p), FMMCL_SUCCESS);
    ck_assert_int_eq(t->levels, 3);
    double fixed_pairs;
    ck_assert_int_eq(fmmcl_plan_counts(plan, "p2p", &fixed_pairs), FMMCL_SUCCESS);
    fmmcl_plan_destroy(plan);
    o.leaf_size = 0;
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
    ck_assert_int_eq(fmmcl_fmm2d_debug_tree(plan, &t, &p), FMMCL_SUCCESS);
    levels[kind] = t->levels;
    ck_assert_int_eq(fmmcl_plan_counts(plan, "p2p", &pairs[kind]), FMMCL_SUCCESS);
    fmmcl_plan_destroy(plan);
    if (kind == CLUSTERED)
      ck_assert_msg(pairs[kind] < 0.5 * fixed_pairs, "%g pairs, %g at level 3", pairs[kind], fixed_pairs);
  }
  ck_assert_msg(levels[CLUSTERED] > levels[UNIFORM], "levels: clustered %d, uniform %d", levels[CLUSTERED],
                levels[UNIFORM]);
  free(x);
}
END_TEST

/* Degenerate sets: one point, all points on one spot, a few points. */
START_TEST(test_degenerate) {
  double x[2 * 50], q[50], pot[50], rpot[50];
  fmmcl_plan_options o = laplace2d(FMMCL_FMM, FMMCL_SINGLE, 9);
  for (int i = 0; i < 50; i++) x[2 * i] = 0.25, x[2 * i + 1] = -3, q[i] = 1;
  fmmcl_plan plan;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 50, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
  for (int i = 0; i < 50; i++) ck_assert_double_eq(pot[i], 0);
  fmmcl_plan_destroy(plan);
  make_points(UNIFORM, 5, 30, x);
  make_charges(5, 31, q);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 5, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  ck_assert_int_eq(fmmcl_reference_direct(&o, 5, x, q, 0, NULL, rpot, NULL), FMMCL_SUCCESS);
  ck_assert_double_lt(fmmcl_test_rel_l2(pot, rpot, 5), 1e-5);
  /* one point: sees nothing */
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 1, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
  ck_assert_double_eq(pot[0], 0);
  fmmcl_plan_destroy(plan);
  /* beyond float's range after the shift: refused, not inf */
  x[0] = -1e39, x[1] = 0, x[2] = 1e39, x[3] = 0;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 2, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* The fmmcl program: --kernel laplace2d with --method fmm and direct, its own
 * check against the double-precision host sum. */
static double cli_error(const char *args, const char *label) {
  char cmd[1024];
  const char *dev = getenv("FMMCL_TEST_DEVICE");
  snprintf(cmd, sizeof cmd, "FMMCL_DEVICE='%s' '%s/fmmcl' %s -q 2>&1", dev && *dev ? dev : "cpu",
           FMMCL_BIN_DIR, args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  char line[512];
  double v = NAN;
  while (fgets(line, sizeof line, p)) {
    const char *at = strstr(line, label);
    if (at) v = strtod(at + strlen(label), NULL);
  }
  ck_assert_int_eq(pclose(p), 0);
  return v;
}

START_TEST(test_cli) {
  const char *pot = "relative L2 error (potential):", *grad = "relative L2 error (gradient):";
  const char *fmm_d = "--kernel laplace2d --method fmm --precision double --tol 1e-6 --demo 3000 --check 50";
  const char *fmm_s = "--kernel laplace2d --method fmm --demo 3000 --check 50";
  const char *direct = "--kernel laplace2d --method direct --demo 3000 --check 50";
  if (has_fp64()) {
    double e = cli_error(fmm_d, pot);
    ck_assert_msg(e <= 1e-6, "fmm double: %g", e);
    e = cli_error(fmm_d, grad);
    ck_assert_msg(e <= 1e-6, "fmm double gradient: %g", e);
  }
  double e = cli_error(fmm_s, pot);
  ck_assert_msg(e <= 1e-4, "fmm single: %g", e);
  e = cli_error(direct, pot);
  ck_assert_msg(e <= 1e-5, "direct single: %g", e);
}
END_TEST

START_TEST(test_invalid_options) {
  double x[6] = {0, 0, 1, 0, 0, 1};
  fmmcl_plan plan;
  fmmcl_plan_options o = laplace2d(FMMCL_FMM, FMMCL_SINGLE, 8);
  o.softening = 0.1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  o = laplace2d(FMMCL_FMM, FMMCL_SINGLE, FMMCL_FMM2D_MAX_ORDER_SINGLE + 1);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  o = laplace2d(FMMCL_FMM, FMMCL_SINGLE, 0);
  o.tolerance = 1e-8;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  o = laplace2d(FMMCL_FMM, FMMCL_SINGLE, 4);
  o.leaf_size = -1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  o = laplace2d(FMMCL_FMM, FMMCL_SINGLE, 4);
  x[3] = NAN;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_NONFINITE_INPUT);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 0, x, 0, NULL, &plan), FMMCL_ERROR_EMPTY_INPUT);
  o.dim = 3;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 1, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert(fmmcl_fmm2d_predicted_error(12) < fmmcl_fmm2d_predicted_error(6));
}
END_TEST

static Suite *fmm2d_suite(void) {
  Suite *s = suite_create("fmm2d");
  TCase *direct = tcase_create("direct");
  tcase_add_checked_fixture(direct, setup, teardown);
  tcase_add_test(direct, test_reference_two_points);
  tcase_add_loop_test(direct, test_direct_device, 0, 2);
  suite_add_tcase(s, direct);
  TCase *ref = tcase_create("reference");
  tcase_add_test(ref, test_reference_operators);
  tcase_add_loop_test(ref, test_reference_fmm, 0, N_DIST);
  suite_add_tcase(s, ref);
  TCase *ops = tcase_create("operators");
  tcase_add_checked_fixture(ops, setup, teardown);
  tcase_add_loop_test(ops, test_operators, 0, 4);
  tcase_add_loop_test(ops, test_m2l_tilings, 0, 2);
  tcase_add_test(ops, test_tile_list);
  suite_add_tcase(s, ops);
  TCase *acc = tcase_create("accuracy");
  tcase_add_checked_fixture(acc, setup, teardown);
  tcase_add_loop_test(acc, test_error_falls_with_order, 0, N_DIST);
  tcase_add_loop_test(acc, test_tolerance, 0, N_DIST);
  tcase_add_test(acc, test_targets_and_reuse);
  tcase_add_test(acc, test_gpu_default_m2l);
  tcase_add_test(acc, test_degenerate);
  tcase_add_test(acc, test_depth_rule);
  tcase_add_test(acc, test_invalid_options);
  tcase_add_test(acc, test_cli);
  suite_add_tcase(s, acc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(fmm2d_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
