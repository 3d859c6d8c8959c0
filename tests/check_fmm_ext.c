/* check_fmm_ext.c — Laplace dipoles and Hessians through the 3D FMM and
 * treecode (fmmcl_plan_evaluate) against fmmcl_reference_evaluate over all
 * targets, float and double, on uniform, clustered and surface sets with
 * targets among or apart from the sources; errors falling as the tolerance
 * tightens; the new device operators (dipole P2M and P2L, Hessian L2P and
 * M2P) against their plain-C references; stresslets by FMM against the
 * direct sum. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmmcl.h"
#include "methods/laplace3d/expansions3d.h"
#include "methods/laplace3d/fmm3d.h"
#include "testing/distributions.h"
#include "test_util.h"

static fmmcl_context ctx;

/* Relative L2 errors of one evaluation: potential, gradient, Hessian. */
typedef struct {
  double pot, grad, hess;
} errors;

/* What a case sums. */
typedef struct {
  fmmcl_method method;
  fmmcl_precision prec;
  fmmcl_distribution dist;
  size_t ns, nt; /* nt 0: the targets are the sources */
  int charges;   /* with charges as well as dipoles */
  int dipoles;   /* dipole sources */
  int hessian;   /* Hessian output */
  double tol;
} fmm_case;

static double *values(size_t n, unsigned seed) {
  double *v = malloc((n ? n : 1) * sizeof *v);
  ck_assert_ptr_nonnull(v);
  fmmcl_test_random_values(seed, n, -1, 1, v);
  return v;
}

static double *points(fmmcl_distribution d, unsigned seed, size_t n) {
  double *p = malloc(3 * n * sizeof *p);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(fmmcl_distribution_points(d, 3, seed, n, 0, p), 0);
  return p;
}

static errors run_case(const fmm_case *c) {
  fmmcl_plan_options o;
  ck_assert_int_eq(fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D), FMMCL_SUCCESS);
  o.method = c->method;
  o.precision = c->prec;
  o.tolerance = c->tol;
  o.gradient = 1;
  o.dipoles = c->dipoles;
  o.hessian = c->hessian;
  o.leaf_size = 64; /* several levels at a few thousand points */
  double *src = points(c->dist, 1, c->ns);
  const size_t m = c->nt ? c->nt : c->ns;
  /* separate targets: the same shape from another seed */
  double *tgt = c->nt ? points(c->dist, 2, c->nt) : NULL;
  fmmcl_sources_data in = {0};
  in.charges = c->charges ? values(c->ns, 3) : NULL;
  in.dipoles = c->dipoles ? values(3 * c->ns, 4) : NULL;
  double *pot = calloc(m, sizeof *pot), *grad = calloc(3 * m, sizeof *grad);
  double *hess = c->hessian ? calloc(6 * m, sizeof *hess) : NULL;
  double *rpot = calloc(m, sizeof *rpot), *rgrad = calloc(3 * m, sizeof *rgrad);
  double *rhess = calloc(6 * m, sizeof *rhess);
  ck_assert(pot && grad && rpot && rgrad && rhess && (hess || !c->hessian));
  fmmcl_plan plan;
  fmmcl_status st = fmmcl_plan_create(ctx, &o, c->ns, src, c->nt, tgt, &plan);
  ck_assert_msg(st == FMMCL_SUCCESS, "plan: %s", fmmcl_last_error(ctx));
  fmmcl_targets_data out = {.potential = pot, .gradient = grad, .hessian = hess};
  st = fmmcl_plan_evaluate(plan, &in, &out);
  ck_assert_msg(st == FMMCL_SUCCESS, "evaluate: %s", fmmcl_last_error(ctx));
  fmmcl_plan_destroy(plan);
  fmmcl_plan_options ro = o;
  ro.method = FMMCL_DIRECT;
  ro.hessian = 1;
  fmmcl_targets_data ref = {.potential = rpot, .gradient = rgrad, .hessian = rhess};
  st = fmmcl_reference_evaluate(&ro, c->ns, src, &in, c->nt, tgt, &ref);
  ck_assert_msg(st == FMMCL_SUCCESS, "reference: %s", fmmcl_last_error(NULL));
  errors e = {fmmcl_test_rel_l2(pot, rpot, m), fmmcl_test_rel_l2(grad, rgrad, 3 * m),
              c->hessian ? fmmcl_test_rel_l2(hess, rhess, 6 * m) : 0};
  free(src), free(tgt), free((void *)in.charges), free((void *)in.dipoles);
  free(pot), free(grad), free(hess), free(rpot), free(rgrad), free(rhess);
  return e;
}

static const char *method_word(fmmcl_method m) { return m == FMMCL_FMM ? "fmm" : "treecode"; }

/* The promise of the tolerance (as check_fmm3d.c states it for charges):
 * the potential within tol in relative L2 over all targets; gradients and
 * Hessians, one and two derivatives further from it, within ten times. */
static void expect_within(const fmm_case *c) {
  const errors e = run_case(c);
  const char *dist = fmmcl_distribution_name(c->dist);
  const char *prec = c->prec == FMMCL_DOUBLE ? "double" : "float";
  ck_assert_msg(e.pot <= c->tol, "%s %s %s tol %.0e: potential error %.3e", method_word(c->method), prec,
                dist, c->tol, e.pot);
  ck_assert_msg(e.grad <= 10 * c->tol, "%s %s %s tol %.0e: gradient error %.3e", method_word(c->method), prec,
                dist, c->tol, e.grad);
  ck_assert_msg(e.hess <= 10 * c->tol, "%s %s %s tol %.0e: Hessian error %.3e", method_word(c->method), prec,
                dist, c->tol, e.hess);
}

/* The three shapes: uniform and surface with the targets at the sources,
 * clusters with targets of their own (a point never sees itself). */
static const fmmcl_distribution shapes[] = {FMMCL_DIST_UNIFORM, FMMCL_DIST_SURFACE, FMMCL_DIST_CLUSTERS};

static fmm_case shape_case(fmmcl_method method, fmmcl_precision prec, int shape) {
  const fmm_case c = {
      method, prec, shapes[shape], 3000, shape == 2 ? 2000 : 0, 1, 1, 1, prec == FMMCL_DOUBLE ? 1e-7 : 1e-4};
  return c;
}

/* Charges and dipoles, potential, gradient and Hessian. */
START_TEST(test_fmm_float) {
  const fmm_case c = shape_case(FMMCL_FMM, FMMCL_SINGLE, _i);
  expect_within(&c);
}
END_TEST

START_TEST(test_fmm_double) {
  const fmm_case c = shape_case(FMMCL_FMM, FMMCL_DOUBLE, _i);
  expect_within(&c);
}
END_TEST

START_TEST(test_treecode_float) {
  const fmm_case c = shape_case(FMMCL_TREECODE, FMMCL_SINGLE, _i);
  expect_within(&c);
}
END_TEST

START_TEST(test_treecode_double) {
  const fmm_case c = shape_case(FMMCL_TREECODE, FMMCL_DOUBLE, _i);
  expect_within(&c);
}
END_TEST

/* Dipoles alone and charges with a Hessian alone: each part of the
 * expansions carries its own error. */
START_TEST(test_parts) {
  const fmm_case dip = {FMMCL_FMM, FMMCL_DOUBLE, FMMCL_DIST_UNIFORM, 3000, 2000, 0, 1, 0, 1e-6};
  const fmm_case hess = {FMMCL_FMM, FMMCL_DOUBLE, FMMCL_DIST_UNIFORM, 3000, 2000, 1, 0, 1, 1e-6};
  const fmm_case tc = {FMMCL_TREECODE, FMMCL_SINGLE, FMMCL_DIST_CLUSTERS, 3000, 0, 0, 1, 1, 1e-4};
  expect_within(&dip);
  expect_within(&hess);
  expect_within(&tc);
}
END_TEST

/* A P2P tuned to several targets per work-item (as on GPUs in double):
 * the dipole and Hessian near field keeps one and sums the same; and one
 * that stages sources, dipoles and low parts in local memory (TILE=1). */
START_TEST(test_tiled_p2p) {
  static const char *const tilings[] = {"WGS=64 UNROLL=8 TPW=2 TILE=0", "WGS=32 UNROLL=4 TPW=1 TILE=1"};
  ck_assert_msg(fmmcl_tuning_override(ctx, "fmm3d_p2p", tilings[_i]) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  const fmm_case c = {FMMCL_FMM, FMMCL_DOUBLE, FMMCL_DIST_SURFACE, 3000, 0, 1, 1, 1, 1e-7};
  expect_within(&c);
  ck_assert_int_eq(fmmcl_tuning_override(ctx, "fmm3d_p2p", NULL), FMMCL_SUCCESS);
}
END_TEST

/* The far field's error follows the tolerance down (so the dipole moments
 * and the second derivatives of L2P and M2P are those of the sum, not
 * only the near field's): each step of 1e-3 cuts every error. */
START_TEST(test_error_falls) {
  static const double tols[] = {1e-3, 1e-6, 1e-9};
  const fmmcl_method method = _i ? FMMCL_TREECODE : FMMCL_FMM;
  errors last = {INFINITY, INFINITY, INFINITY};
  for (size_t k = 0; k < sizeof tols / sizeof tols[0]; k++) {
    const fmm_case c = {method, FMMCL_DOUBLE, FMMCL_DIST_UNIFORM, 2000, 1500, 1, 1, 1, tols[k]};
    const errors e = run_case(&c);
    ck_assert_msg(e.pot < last.pot / 10 && e.grad < last.grad / 10 && e.hess < last.hess / 10,
                  "%s tol %.0e: errors %.3e %.3e %.3e did not fall from %.3e %.3e %.3e", method_word(method),
                  tols[k], e.pot, e.grad, e.hess, last.pot, last.grad, last.hess);
    ck_assert_msg(e.pot <= tols[k] && e.hess <= 10 * tols[k], "%s tol %.0e: errors %.3e %.3e",
                  method_word(method), tols[k], e.pot, e.hess);
    last = e;
  }
}
END_TEST

/* A dipole plan executed with charges only (fmmcl_plan_execute) sums what
 * a charge plan does: its dipoles are zero, not left over from an evaluate. */
START_TEST(test_execute_charges) {
  const size_t n = 2000;
  double *src = points(FMMCL_DIST_UNIFORM, 5, n), *q = values(n, 6), *d = values(3 * n, 7);
  double *p0 = malloc(n * sizeof *p0), *p1 = malloc(n * sizeof *p1), *g0 = malloc(3 * n * sizeof *g0),
         *g1 = malloc(3 * n * sizeof *g1), *scratch = malloc(n * sizeof *scratch);
  ck_assert(p0 && p1 && g0 && g1 && scratch);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM;
  o.precision = FMMCL_DOUBLE;
  o.leaf_size = 64;
  fmmcl_plan plain, dip;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, src, 0, NULL, &plain), FMMCL_SUCCESS);
  o.dipoles = 1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, src, 0, NULL, &dip), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(plain, q, p0, g0), FMMCL_SUCCESS);
  fmmcl_sources_data in = {.charges = q, .dipoles = d};
  fmmcl_targets_data out = {.potential = scratch};
  ck_assert_int_eq(fmmcl_plan_evaluate(dip, &in, &out), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(dip, q, p1, g1), FMMCL_SUCCESS);
  ck_assert_double_le(fmmcl_test_rel_l2(p1, p0, n), 1e-14);
  ck_assert_double_le(fmmcl_test_rel_l2(g1, g0, 3 * n), 1e-14);
  fmmcl_plan_destroy(plain);
  fmmcl_plan_destroy(dip);
  free(src), free(q), free(d), free(p0), free(p1), free(g0), free(g1), free(scratch);
}
END_TEST

/* ---- each new device operator against its plain-C reference ------------------ */

/* A double FMM plan with dipoles and a Hessian on 2000 Plummer-like points
 * (clusters), its tree and lists, sorted charges and dipoles, and the
 * device's expansions (unscaled, as lib/methods/laplace3d/expansions3d.h). */
typedef struct {
  fmmcl_plan plan;
  const fmmcl_tree3d *t;
  int p;
  size_t nc, n;
  double *q, *d, *qs, *ds;
  double *M, *L; /* after P2M + M2M and after M2L + P2L + L2L, on the device */
  fmmcl_tree3d_fmm_lists lists;
} op_fixture;

static void op_open(op_fixture *f) {
  memset(f, 0, sizeof *f);
  const size_t n = f->n = 2000;
  double *x = points(FMMCL_DIST_CLUSTERS, 8, n);
  f->q = values(n, 9), f->d = values(3 * n, 10);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM;
  o.precision = FMMCL_DOUBLE;
  o.order = 6;
  o.leaf_size = 16;
  o.dipoles = o.hessian = 1;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &f->plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  free(x);
  ck_assert_int_eq(fmmcl_fmm3d_debug_tree(f->plan, &f->t, &f->p), FMMCL_SUCCESS);
  f->nc = 2 * fmmcl_exp3d_ncoef(f->p);
  f->qs = malloc(n * sizeof *f->qs), f->ds = malloc(3 * n * sizeof *f->ds);
  for (size_t i = 0; i < n; i++) {
    const size_t j = f->t->source_perm[i];
    f->qs[i] = f->q[j];
    for (int c = 0; c < 3; c++) f->ds[3 * i + c] = f->d[3 * j + c];
  }
  f->M = calloc(f->t->n_cells * f->nc, sizeof *f->M), f->L = calloc(f->t->n_cells * f->nc, sizeof *f->L);
  ck_assert_int_eq(fmmcl_tree3d_fmm_lists_build(f->t, &f->lists), FMMCL_SUCCESS);
}

static void op_close(op_fixture *f) {
  fmmcl_plan_destroy(f->plan);
  fmmcl_tree3d_fmm_lists_free(&f->lists);
  free(f->q), free(f->d), free(f->qs), free(f->ds), free(f->M), free(f->L);
}

/* Rounding of p^2-term sums in double, far above it only on a real bug. */
static void expect_close(const char *what, const double *dev, const double *ref, size_t n) {
  double norm = 0;
  for (size_t i = 0; i < n; i++) norm += ref[i] * ref[i];
  ck_assert_msg(norm > 0, "%s: reference is all zero (operator not exercised)", what);
  const double e = fmmcl_test_rel_l2(dev, ref, n);
  ck_assert_msg(e < 1e-11, "%s: device vs C relative error %.3e", what, e);
}

/* P2M and P2L of charges and dipoles. */
START_TEST(test_operator_sources) {
  op_fixture f;
  op_open(&f);
  const fmmcl_tree3d *t = f.t;
  const size_t ne = t->n_cells * f.nc;
  double *ref = calloc(ne, sizeof *ref);
  ck_assert_int_eq(
      fmmcl_fmm3d_debug_run_ext(f.plan, f.q, f.d, FMMCL_PHASE_P2M, NULL, NULL, f.M, NULL, NULL, NULL), 0);
  for (size_t i = 0; i < t->n_cells; i++) {
    const fmmcl_tree3d_cell *c = &t->cells[i];
    if (!fmmcl_tree3d_is_leaf(c)) continue;
    const size_t k = fmmcl_tree3d_n_src(c);
    fmmcl_exp3d_p2m(f.p, c->center, k, t->source_xyz + 3 * c->src_begin, f.qs + c->src_begin, ref + i * f.nc);
    fmmcl_exp3d_p2m_dipoles(f.p, c->center, k, t->source_xyz + 3 * c->src_begin, f.ds + 3 * c->src_begin,
                            ref + i * f.nc);
  }
  expect_close("P2M with dipoles", f.M, ref, ne);
  memset(ref, 0, ne * sizeof *ref);
  ck_assert_int_eq(
      fmmcl_fmm3d_debug_run_ext(f.plan, f.q, f.d, FMMCL_PHASE_P2L, NULL, NULL, NULL, f.L, NULL, NULL), 0);
  const fmmcl_tree3d_csr *x = &f.lists.x;
  for (size_t b = 0; b < x->n_rows; b++)
    for (size_t e = x->offsets[b]; e < x->offsets[b + 1]; e++) {
      const fmmcl_tree3d_cell *a = &t->cells[x->indices[e]];
      const size_t k = fmmcl_tree3d_n_src(a);
      fmmcl_exp3d_p2l(f.p, t->cells[b].center, k, t->source_xyz + 3 * a->src_begin, f.qs + a->src_begin,
                      ref + b * f.nc);
      fmmcl_exp3d_p2l_dipoles(f.p, t->cells[b].center, k, t->source_xyz + 3 * a->src_begin,
                              f.ds + 3 * a->src_begin, ref + b * f.nc);
    }
  expect_close("P2L with dipoles", f.L, ref, ne);
  free(ref);
  op_close(&f);
}
END_TEST

/* L2P and M2P Hessians, from the device's own expansions of the sum. */
START_TEST(test_operator_hessians) {
  op_fixture f;
  op_open(&f);
  const fmmcl_tree3d *t = f.t;
  const size_t nh = 6 * t->n_targets;
  double *hess = calloc(nh, sizeof *hess), *ref = calloc(nh, sizeof *ref);
  const unsigned up = FMMCL_PHASE_P2M | FMMCL_PHASE_M2M | FMMCL_PHASE_M2L | FMMCL_PHASE_P2L | FMMCL_PHASE_L2L;
  ck_assert_int_eq(fmmcl_fmm3d_debug_run_ext(f.plan, f.q, f.d, up, NULL, NULL, f.M, f.L, NULL, NULL), 0);
  ck_assert_int_eq(
      fmmcl_fmm3d_debug_run_ext(f.plan, f.q, f.d, FMMCL_PHASE_L2P, NULL, f.L, NULL, NULL, NULL, hess), 0);
  for (size_t i = 0; i < t->n_cells; i++) {
    const fmmcl_tree3d_cell *c = &t->cells[i];
    if (fmmcl_tree3d_is_leaf(c))
      fmmcl_exp3d_l2p_hessian(f.p, c->center, f.L + i * f.nc, fmmcl_tree3d_n_tgt(c),
                              t->target_xyz + 3 * c->tgt_begin, ref + 6 * c->tgt_begin);
  }
  expect_close("L2P Hessian", hess, ref, nh);
  memset(ref, 0, nh * sizeof *ref);
  ck_assert_int_eq(
      fmmcl_fmm3d_debug_run_ext(f.plan, f.q, f.d, FMMCL_PHASE_M2P, f.M, NULL, NULL, NULL, NULL, hess), 0);
  const fmmcl_tree3d_csr *w = &f.lists.w;
  for (size_t b = 0; b < w->n_rows; b++)
    for (size_t e = w->offsets[b]; e < w->offsets[b + 1]; e++) {
      const int32_t a = w->indices[e];
      fmmcl_exp3d_m2p_hessian(f.p, t->cells[a].center, f.M + a * f.nc, fmmcl_tree3d_n_tgt(&t->cells[b]),
                              t->target_xyz + 3 * t->cells[b].tgt_begin, ref + 6 * t->cells[b].tgt_begin);
    }
  expect_close("M2P Hessian (W list)", hess, ref, nh);
  free(hess), free(ref);
  op_close(&f);
}
END_TEST

/* ---- stresslets by FMM -------------------------------------------------------- */

/* max_i |a_i - b_i| / max_i |b_i|, per values to a target. */
static double max_rel(const double *a, const double *b, size_t n, size_t per) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < n; i++) {
    double e = 0, r = 0;
    for (size_t c = 0; c < per; c++) {
      e += (a[i * per + c] - b[i * per + c]) * (a[i * per + c] - b[i * per + c]);
      r += b[i * per + c] * b[i * per + c];
    }
    err = fmax(err, sqrt(e)), ref = fmax(ref, sqrt(r));
  }
  return ref > 0 ? err / ref : err;
}

/* Stokeslets and stresslets (and stresslets alone) by the Stokes FMM (the
 * Stokes pair near, four Laplace FMMs with charges and dipoles far)
 * against the reference over all targets, sets moved off the origin by 5,
 * velocity and pressure, as check_kernels_ext.c holds the Stokeslet FMM:
 * double at tol 1e-6 on a surface and 1e-8 in clusters, float at 1e-4 in
 * a cube, each within tol plus 30 times the plan's rounding estimate
 * (see there). */
START_TEST(test_stresslet_fmm) {
  static const struct {
    fmmcl_precision prec;
    fmmcl_distribution d;
    double tol;
  } runs[] = {{FMMCL_DOUBLE, FMMCL_DIST_SURFACE, 1e-6},
              {FMMCL_DOUBLE, FMMCL_DIST_CLUSTERS, 1e-8},
              {FMMCL_SINGLE, FMMCL_DIST_UNIFORM, 1e-4}};
  const fmmcl_precision prec = runs[_i].prec;
  const fmmcl_distribution d = runs[_i].d;
  const size_t n = 1500;
  const double tol = runs[_i].tol;
  double *x = malloc(3 * n * sizeof *x), *f = values(3 * n, 31), *ss = values(3 * n, 32),
         *sn = values(3 * n, 33);
  double *u = malloc(3 * n * sizeof *u), *p = malloc(n * sizeof *p);
  double *ru = malloc(3 * n * sizeof *ru), *rp = malloc(n * sizeof *rp);
  ck_assert(x && u && p && ru && rp);
  ck_assert_int_eq(fmmcl_distribution_points(d, 3, 41, n, 5.0, x), 0);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_STOKES_3D);
  o.method = FMMCL_FMM;
  o.precision = prec;
  o.tolerance = tol;
  o.pressure = 1;
  o.stresslets = 1;
  o.leaf_size = 64; /* a far field at this size */
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  double est, dist;
  ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, NULL, &est, &dist), FMMCL_SUCCESS);
  const double bound = tol + 30 * est;
  for (int forces = 1; forces >= 0; forces--) {
    const fmmcl_sources_data in = {
        .forces = forces ? f : NULL, .stresslet_strengths = ss, .stresslet_orientations = sn};
    fmmcl_targets_data out = {.velocity = u, .pressure = p}, ref = {.velocity = ru, .pressure = rp};
    ck_assert_msg(fmmcl_plan_evaluate(plan, &in, &out) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
    ck_assert_int_eq(fmmcl_reference_evaluate(&o, n, x, &in, 0, NULL, &ref), FMMCL_SUCCESS);
    const double eu = max_rel(u, ru, n, 3), ep = max_rel(p, rp, n, 1);
    if (getenv("FMMCL_TEST_VERBOSE"))
      printf("stresslet fmm %s %s tol %g forces %d: %.3g %.3g est %.3g\n", fmmcl_distribution_name(d),
             prec == FMMCL_DOUBLE ? "double" : "float", tol, forces, eu, ep, est);
    ck_assert_msg(eu <= bound && ep <= bound, "%s %s forces %d: velocity %.3g pressure %.3g > %g",
                  fmmcl_distribution_name(d), prec == FMMCL_DOUBLE ? "double" : "single", forces, eu, ep,
                  bound);
  }
  fmmcl_plan_info info;
  ck_assert_int_eq(fmmcl_plan_describe(plan, &info), FMMCL_SUCCESS);
  ck_assert_int_gt(info.order, 0);
  fmmcl_plan_destroy(plan);
  free(x), free(f), free(ss), free(sn), free(u), free(p), free(ru), free(rp);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("fmm_ext");
  TCase *tc = tcase_create("laplace");
  /* per test, in its own process: an OpenCL context does not survive fork */
  fmmcl_test_context_fixture(tc, &ctx);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_fmm_float, 0, 3);
  tcase_add_loop_test(tc, test_fmm_double, 0, 3);
  tcase_add_loop_test(tc, test_treecode_float, 0, 3);
  tcase_add_loop_test(tc, test_treecode_double, 0, 3);
  tcase_add_test(tc, test_parts);
  tcase_add_loop_test(tc, test_tiled_p2p, 0, 2);
  tcase_add_loop_test(tc, test_error_falls, 0, 2);
  tcase_add_test(tc, test_execute_charges);
  suite_add_tcase(s, tc);
  TCase *op = tcase_create("operators");
  fmmcl_test_context_fixture(op, &ctx);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(op, 300);
  tcase_add_test(op, test_operator_sources);
  tcase_add_test(op, test_operator_hessians);
  suite_add_tcase(s, op);
  TCase *st = tcase_create("stokes");
  fmmcl_test_context_fixture(st, &ctx);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(st, 300);
  tcase_add_loop_test(st, test_stresslet_fmm, 0, 3);
  suite_add_tcase(s, st);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
