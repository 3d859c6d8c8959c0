/* check_fmm3d.c — Check suite of the 3D Laplace FMM and treecode on the
 * device: each operator against its plain-C reference, whole plans against
 * the direct sum, the order-from-tolerance rule, degenerate inputs. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace3d/expansions3d.h"
#include "methods/laplace3d/fmm3d.h"
#include "test_util.h"
#include "tree/tree3d.h"

static fmmcl_context ctx;

static void setup(void) {
  ctx = fmmcl_test_context();
  ck_assert_ptr_nonnull(ctx);
}
static void teardown(void) { fmmcl_context_destroy(ctx); }

/* ---- point sets --------------------------------------------------------- */

static unsigned long long rng;

static double uniform(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

static void direction(double *d) {
  double z = 2 * uniform() - 1, phi = 6.283185307179586 * uniform(), s = sqrt(1 - z * z);
  d[0] = s * cos(phi), d[1] = s * sin(phi), d[2] = z;
}

enum { UNIFORM, PLUMMER, ELLIPSOID, SURFACE, N_DIST };
static const char *dist_name[] = {"uniform cube", "Plummer sphere", "ellipsoid 1:1:4", "sphere surface"};

/* The four distributions: the cube fills the tree evenly; Plummer's density
 * spans orders of magnitude (deep, adaptive tree, non-empty W and X lists);
 * the ellipsoid and the surface leave most of the root cube empty. */
static void make_points(int kind, size_t n, unsigned seed, double *x) {
  rng = 88172645463325252ULL ^ ((unsigned long long)seed * 2654435761ULL);
  for (size_t i = 0; i < n; i++) {
    double *p = x + 3 * i, d[3];
    if (kind == UNIFORM) {
      for (int c = 0; c < 3; c++) p[c] = uniform();
    } else if (kind == PLUMMER) {
      double r;
      do r = 1 / sqrt(pow(uniform() * 0.999 + 1e-9, -2.0 / 3.0) - 1);
      while (r > 30);
      direction(d);
      for (int c = 0; c < 3; c++) p[c] = r * d[c];
    } else if (kind == ELLIPSOID) {
      double r = cbrt(uniform());
      direction(d);
      p[0] = r * d[0], p[1] = r * d[1], p[2] = 4 * r * d[2];
    } else {
      direction(p);
    }
  }
}

/* Charges of both signs: the relative error of a sum that cancels is the
 * harder test. */
static void make_charges(size_t n, unsigned seed, double *q) {
  rng = 0x9E3779B97F4A7C15ULL ^ seed;
  for (size_t i = 0; i < n; i++) q[i] = 2 * uniform() - 1;
}

/* ---- whole plans against the direct sum ---------------------------------- */

typedef fmmcl_test_errors errors;

/* Relative L2 errors of a plan against the double reference (test_util). */
static errors plan_errors(const fmmcl_plan_options *o, size_t ns, const double *src, const double *q,
                          size_t nt, const double *tgt) {
  return fmmcl_test_plan_errors(ctx, o, ns, src, q, nt, tgt);
}

/* Leaves of 256 points on every device (a GPU's default is 512): the
 * sizes below then give every test a far field to measure, wherever the
 * suite runs. */
static fmmcl_plan_options laplace(fmmcl_method method, fmmcl_precision precision, int order) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = method;
  o.precision = precision;
  o.order = order;
  o.leaf_size = 256;
  return o;
}

static errors distribution_errors(int kind, size_t n, const fmmcl_plan_options *o) {
  double *x = malloc(3 * n * sizeof *x), *q = malloc(n * sizeof *q);
  make_points(kind, n, 1, x);
  make_charges(n, 2, q);
  errors e = plan_errors(o, n, x, q, 0, NULL);
  free(x), free(q);
  return e;
}

/* ---- each device operator against the C reference ----------------------- */

/* A plan on a small adaptive problem, its tree, its sorted charges, and
 * buffers for the hook's results (unscaled expansions, 2 * ncoef doubles per
 * cell; out: 4 per sorted target, (d/dx, d/dy, d/dz, phi)). */
typedef struct op_fixture {
  fmmcl_plan plan;
  const fmmcl_tree3d *t;
  int p;
  size_t nc;              /* doubles per cell */
  double *q, *qs;         /* caller's and sorted charges */
  double *M, *L, *out;    /* device results */
  double *Mr, *Lr, *outr; /* reference */
  fmmcl_tree3d_fmm_lists lists;
  const fmmcl_tree3d_treecode_lists *tc; /* a treecode plan's own */
} op_fixture;

static void op_open_at(op_fixture *f, fmmcl_method method, size_t n, fmmcl_precision precision, int order) {
  memset(f, 0, sizeof *f);
  double *x = malloc(3 * n * sizeof *x);
  f->q = malloc(n * sizeof *f->q);
  make_points(PLUMMER, n, 3, x);
  make_charges(n, 4, f->q);
  fmmcl_plan_options o = laplace(method, precision, order);
  /* the treecode's leaves hold several of its target groups */
  o.leaf_size = method == FMMCL_TREECODE ? 100 : 16;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &f->plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  free(x);
  ck_assert_int_eq(fmmcl_fmm3d_debug_tree(f->plan, &f->t, &f->p), FMMCL_SUCCESS);
  f->nc = 2 * fmmcl_exp3d_ncoef(f->p);
  const size_t ne = f->t->n_cells * f->nc, no = 4 * f->t->n_targets;
  f->qs = malloc(n * sizeof *f->qs);
  for (size_t i = 0; i < n; i++) f->qs[i] = f->q[f->t->source_perm[i]];
  f->M = calloc(ne, sizeof(double)), f->L = calloc(ne, sizeof(double)), f->out = calloc(no, sizeof(double));
  f->Mr = calloc(ne, sizeof(double)), f->Lr = calloc(ne, sizeof(double)),
  f->outr = calloc(no, sizeof(double));
  ck_assert_int_eq(fmmcl_tree3d_fmm_lists_build(f->t, &f->lists), FMMCL_SUCCESS);
  if (method == FMMCL_TREECODE) {
    ck_assert_int_eq(fmmcl_fmm3d_debug_treecode_lists(f->plan, &f->tc), FMMCL_SUCCESS);
    ck_assert_msg(f->tc->n_groups > f->t->n_leaves, "%zu groups in %zu leaves: none split", f->tc->n_groups,
                  f->t->n_leaves);
  }
}

static void op_open(op_fixture *f, fmmcl_method method, size_t n) {
  op_open_at(f, method, n, FMMCL_DOUBLE, 6);
}

static void op_close(op_fixture *f) {
  fmmcl_plan_destroy(f->plan);
  fmmcl_tree3d_fmm_lists_free(&f->lists);
  free(f->q), free(f->qs), free(f->M), free(f->L), free(f->out), free(f->Mr), free(f->Lr), free(f->outr);
}

static const double *cell_src_xyz(const op_fixture *f, const fmmcl_tree3d_cell *c) {
  return f->t->source_xyz + 3 * c->src_begin;
}

static void ref_p2m(op_fixture *f, double *M) {
  for (size_t i = 0; i < f->t->n_cells; i++) {
    const fmmcl_tree3d_cell *c = &f->t->cells[i];
    if (fmmcl_tree3d_is_leaf(c))
      fmmcl_exp3d_p2m(f->p, c->center, fmmcl_tree3d_n_src(c), cell_src_xyz(f, c), f->qs + c->src_begin,
                      M + i * f->nc);
  }
}

/* Children have larger indices than their parents: reverse order is upward. */
static void ref_m2m(op_fixture *f, double *M) {
  for (size_t i = f->t->n_cells; i-- > 1;) {
    const fmmcl_tree3d_cell *c = &f->t->cells[i];
    fmmcl_exp3d_m2m(f->p, c->center, M + i * f->nc, f->t->cells[c->parent].center, M + c->parent * f->nc);
  }
}

static void ref_m2l(op_fixture *f, const double *M, double *L) {
  const fmmcl_tree3d_csr *v = &f->lists.v;
  for (size_t b = 0; b < v->n_rows; b++)
    for (size_t e = v->offsets[b]; e < v->offsets[b + 1]; e++) {
      const int32_t a = v->indices[e];
      fmmcl_exp3d_m2l(f->p, f->t->cells[a].center, M + a * f->nc, f->t->cells[b].center, L + b * f->nc);
    }
}

static void ref_p2l(op_fixture *f, double *L) {
  const fmmcl_tree3d_csr *x = &f->lists.x;
  for (size_t b = 0; b < x->n_rows; b++)
    for (size_t e = x->offsets[b]; e < x->offsets[b + 1]; e++) {
      const fmmcl_tree3d_cell *a = &f->t->cells[x->indices[e]];
      fmmcl_exp3d_p2l(f->p, f->t->cells[b].center, fmmcl_tree3d_n_src(a), cell_src_xyz(f, a),
                      f->qs + a->src_begin, L + b * f->nc);
    }
}

/* Parents have smaller indices: increasing order is downward. */
static void ref_l2l(op_fixture *f, double *L) {
  for (size_t i = 1; i < f->t->n_cells; i++) {
    const fmmcl_tree3d_cell *c = &f->t->cells[i];
    if (fmmcl_tree3d_n_tgt(c))
      fmmcl_exp3d_l2l(f->p, f->t->cells[c->parent].center, L + c->parent * f->nc, c->center, L + i * f->nc);
  }
}

/* Scatters a reference (pot, grad) of n sorted targets into out's layout. */
static void add_out(double *out, size_t first, size_t n, const double *pot, const double *grad) {
  for (size_t i = 0; i < n; i++) {
    for (int c = 0; c < 3; c++) out[4 * (first + i) + c] += grad[3 * i + c];
    out[4 * (first + i) + 3] += pot[i];
  }
}

static void ref_l2p(op_fixture *f, const double *L, double *out) {
  for (size_t i = 0; i < f->t->n_cells; i++) {
    const fmmcl_tree3d_cell *c = &f->t->cells[i];
    size_t n = fmmcl_tree3d_n_tgt(c);
    if (!fmmcl_tree3d_is_leaf(c) || !n) continue;
    double *pot = calloc(n, sizeof *pot), *grad = calloc(3 * n, sizeof *grad);
    fmmcl_exp3d_l2p(f->p, c->center, L + i * f->nc, n, f->t->target_xyz + 3 * c->tgt_begin, pot, grad);
    add_out(out, c->tgt_begin, n, pot, grad);
    free(pot), free(grad);
  }
}

static void ref_m2p(op_fixture *f, const fmmcl_tree3d_csr *w, const double *M, double *out) {
  for (size_t b = 0; b < w->n_rows; b++) {
    const fmmcl_tree3d_cell *c = &f->t->cells[b];
    size_t n = fmmcl_tree3d_n_tgt(c);
    double *pot = calloc(n + 1, sizeof *pot), *grad = calloc(3 * n + 1, sizeof *grad);
    for (size_t e = w->offsets[b]; e < w->offsets[b + 1]; e++) {
      const int32_t a = w->indices[e];
      fmmcl_exp3d_m2p(f->p, f->t->cells[a].center, M + a * f->nc, n, f->t->target_xyz + 3 * c->tgt_begin, pot,
                      grad);
    }
    add_out(out, c->tgt_begin, n, pot, grad);
    free(pot), free(grad);
  }
}

/* The treecode's multipoles: about the centres of their cells' sources'
 * boxes (the lists' spheres), leaves by P2M, parents by M2M between those
 * centres. */
static void ref_p2m_m2m_treecode(op_fixture *f, double *M) {
  const double *sp = f->tc->sphere;
  for (size_t i = 0; i < f->t->n_cells; i++) {
    const fmmcl_tree3d_cell *c = &f->t->cells[i];
    if (fmmcl_tree3d_is_leaf(c))
      fmmcl_exp3d_p2m(f->p, sp + 4 * i, fmmcl_tree3d_n_src(c), cell_src_xyz(f, c), f->qs + c->src_begin,
                      M + i * f->nc);
  }
  for (size_t i = f->t->n_cells; i-- > 1;) {
    const int32_t parent = f->t->cells[i].parent;
    fmmcl_exp3d_m2m(f->p, sp + 4 * i, M + i * f->nc, sp + 4 * parent, M + parent * f->nc);
  }
}

/* The treecode's M2P: each far cell's multipole (about its sources'
 * centre) evaluated at the group's targets to the degree the entry's
 * geometry needs (fmmcl_fmm3d_m2p_degree, the group's sphere against the
 * cell's). */
static void ref_m2p_treecode(op_fixture *f, const double *M, double *out) {
  const fmmcl_tree3d_treecode_lists *tc = f->tc;
  const fmmcl_tree3d_csr *far = &tc->far;
  const double bound = fmmcl_fmm3d_m2p_term_bound(tc->theta, f->p);
  for (size_t g = 0; g < far->n_rows; g++) {
    const size_t first = tc->group_begin[g], n = tc->group_begin[g + 1] - first;
    const double *gs = tc->group_sphere + 4 * g;
    double *pot = calloc(n + 1, sizeof *pot), *grad = calloc(3 * n + 1, sizeof *grad);
    for (size_t e = far->offsets[g]; e < far->offsets[g + 1]; e++) {
      const int32_t a = far->indices[e];
      const double *sp = tc->sphere + 4 * a;
      const double d[3] = {gs[0] - sp[0], gs[1] - sp[1], gs[2] - sp[2]};
      const double gap = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) - gs[3];
      const int q = gap > 0 ? fmmcl_fmm3d_m2p_degree(sp[3] / gap, bound, f->p) : f->p;
      /* degree-major storage: the first ncoef(q) coefficients are degree <= q */
      fmmcl_exp3d_m2p(q, sp, M + a * f->nc, n, f->t->target_xyz + 3 * first, pot, grad);
    }
    add_out(out, first, n, pot, grad);
    free(pot), free(grad);
  }
}

/* Direct pairs of each row's targets (range[2r] .. range[2r + 1]) with its
 * listed source cells; r = 0 contributes nothing. */
static void ref_p2p_rows(op_fixture *f, const fmmcl_tree3d_csr *u, const size_t *range, double *out) {
  const fmmcl_tree3d *t = f->t;
  for (size_t b = 0; b < u->n_rows; b++)
    for (size_t e = u->offsets[b]; e < u->offsets[b + 1]; e++) {
      const fmmcl_tree3d_cell *a = &t->cells[u->indices[e]];
      for (size_t i = range[2 * b]; i < range[2 * b + 1]; i++)
        for (size_t j = a->src_begin; j < a->src_end; j++) {
          double d[3], r2 = 0;
          for (int c = 0; c < 3; c++)
            d[c] = t->source_xyz[3 * j + c] - t->target_xyz[3 * i + c], r2 += d[c] * d[c];
          if (r2 == 0) continue;
          double rinv = 1 / sqrt(r2), qr = f->qs[j] * rinv;
          out[4 * i + 3] += qr;
          for (int c = 0; c < 3; c++) out[4 * i + c] += qr * rinv * rinv * d[c];
        }
    }
}

/* The U list: rows are cells. */
static void ref_p2p(op_fixture *f, const fmmcl_tree3d_csr *u, double *out) {
  size_t *range = malloc(2 * u->n_rows * sizeof *range);
  for (size_t b = 0; b < u->n_rows; b++)
    range[2 * b] = f->t->cells[b].tgt_begin, range[2 * b + 1] = f->t->cells[b].tgt_end;
  ref_p2p_rows(f, u, range, out);
  free(range);
}

/* The treecode's near list: rows are target groups. */
static void ref_p2p_treecode(op_fixture *f, double *out) {
  const fmmcl_tree3d_treecode_lists *tc = f->tc;
  size_t *range = malloc(2 * (tc->n_groups + 1) * sizeof *range);
  for (size_t g = 0; g < tc->n_groups; g++)
    range[2 * g] = tc->group_begin[g], range[2 * g + 1] = tc->group_begin[g + 1];
  ref_p2p_rows(f, &tc->near, range, out);
  free(range);
}

/* Rounding of p^2-term sums in double, far above it only on a real bug. */
#define OPERATOR_TOL 1e-11

static void expect_close_within(const char *what, const double *dev, const double *ref, size_t n,
                                double tol) {
  double e = fmmcl_test_rel_l2(dev, ref, n), norm = 0;
  for (size_t i = 0; i < n; i++) norm += ref[i] * ref[i];
  ck_assert_msg(norm > 0, "%s: reference is all zero (operator not exercised)", what);
  ck_assert_msg(e < tol, "%s: device vs C relative error %.3e", what, e);
}

static void expect_close(const char *what, const double *dev, const double *ref, size_t n) {
  expect_close_within(what, dev, ref, n, OPERATOR_TOL);
}

/* Every mapping of the P2M: per source (single, order 6), per column
 * (double, orders 6 and 17; single, order 12). */
static const struct {
  fmmcl_precision precision;
  int order;
  double tol;
} p2m_cases[] = {{FMMCL_DOUBLE, 6, OPERATOR_TOL},
                 {FMMCL_DOUBLE, 17, OPERATOR_TOL},
                 {FMMCL_SINGLE, 6, 1e-5},
                 {FMMCL_SINGLE, 12, 1e-5}};

START_TEST(test_operator_p2m) {
  op_fixture f;
  op_open_at(&f, FMMCL_FMM, 3000, p2m_cases[_i].precision, p2m_cases[_i].order);
  ck_assert_int_eq(fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_P2M, NULL, NULL, f.M, NULL, NULL), 0);
  ref_p2m(&f, f.Mr);
  char what[64];
  snprintf(what, sizeof what, "P2M case %d (order %d)", _i, p2m_cases[_i].order);
  expect_close_within(what, f.M, f.Mr, f.t->n_cells * f.nc, p2m_cases[_i].tol);
  op_close(&f);
}
END_TEST

START_TEST(test_operator_m2m) {
  op_fixture f;
  op_open(&f, FMMCL_FMM, 3000);
  ref_p2m(&f, f.Mr);
  ck_assert_int_eq(fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_M2M, f.Mr, NULL, f.M, NULL, NULL), 0);
  ref_m2m(&f, f.Mr);
  expect_close("M2M", f.M, f.Mr, f.t->n_cells * f.nc);
  op_close(&f);
}
END_TEST

START_TEST(test_operator_m2l) {
  op_fixture f;
  op_open(&f, FMMCL_FMM, 3000);
  ref_p2m(&f, f.Mr);
  ref_m2m(&f, f.Mr);
  ck_assert_int_eq(fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_M2L, f.Mr, NULL, NULL, f.L, NULL), 0);
  ref_m2l(&f, f.Mr, f.Lr);
  expect_close("M2L", f.L, f.Lr, f.t->n_cells * f.nc);
  op_close(&f);
}
END_TEST

/* The M2L in batches of target cells sharing directions (and per cell,
 * the CPU devices' default), every coefficient against the C reference: high orders (both ways of staging
 * the shifts where the device's local memory decides), groups of 1 to 16
 * targets, 1 to 8 of them a work-item, an adaptive tree whose groups miss
 * some targets' sources. Single precision: the double reference's
 * multipoles rounded to float, so the sums' rounding at ~1e-7 each. */
static const struct {
  fmmcl_precision precision;
  int order;
  const char *params; /* fmm3d_expansions override; NULL: the defaults */
  double tol;
  const char *mode; /* FMMCL_M2L */
} m2l_cases[] = {{FMMCL_DOUBLE, 17, NULL, OPERATOR_TOL, "batched"},
                 {FMMCL_DOUBLE, 17, "WGS=192 M2L_B=4 M2L_TPI=1", OPERATOR_TOL, "batched"},
                 {FMMCL_DOUBLE, 20, NULL, OPERATOR_TOL, "batched"},
                 {FMMCL_SINGLE, 8, "WGS=64 M2L_B=16 M2L_TPI=2", 1e-5, "batched"},
                 {FMMCL_SINGLE, 5, "WGS=32 M2L_B=2 M2L_TPI=1", 1e-5, "batched"},
                 {FMMCL_DOUBLE, 17, NULL, OPERATOR_TOL, "cell"},
                 {FMMCL_SINGLE, 8, NULL, 1e-5, "cell"}};

START_TEST(test_operator_m2l_batches) {
  const int i = _i;
  setenv("FMMCL_M2L", m2l_cases[i].mode, 1); /* Check runs each test in its own process */
  if (m2l_cases[i].params)
    ck_assert_msg(fmmcl_tuning_override(ctx, "fmm3d_expansions", m2l_cases[i].params) == FMMCL_SUCCESS, "%s",
                  fmmcl_last_error(ctx));
  op_fixture f;
  op_open_at(&f, FMMCL_FMM, 3000, m2l_cases[i].precision, m2l_cases[i].order);
  ck_assert_int_eq(f.p, m2l_cases[i].order);
  ref_p2m(&f, f.Mr);
  ref_m2m(&f, f.Mr);
  ck_assert_int_eq(fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_M2L, f.Mr, NULL, NULL, f.L, NULL), 0);
  ref_m2l(&f, f.Mr, f.Lr);
  char what[64];
  snprintf(what, sizeof what, "M2L case %d (order %d)", i, m2l_cases[i].order);
  expect_close_within(what, f.L, f.Lr, f.t->n_cells * f.nc, m2l_cases[i].tol);
  op_close(&f);
}
END_TEST

START_TEST(test_operator_p2l) {
  op_fixture f;
  op_open(&f, FMMCL_FMM, 3000);
  ck_assert_int_eq(fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_P2L, NULL, NULL, NULL, f.L, NULL), 0);
  ref_p2l(&f, f.Lr);
  expect_close("P2L", f.L, f.Lr, f.t->n_cells * f.nc);
  op_close(&f);
}
END_TEST

START_TEST(test_operator_l2l) {
  op_fixture f;
  op_open(&f, FMMCL_FMM, 3000);
  ref_p2m(&f, f.Mr);
  ref_m2m(&f, f.Mr);
  ref_m2l(&f, f.Mr, f.Lr);
  ref_p2l(&f, f.Lr);
  ck_assert_int_eq(fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_L2L, NULL, f.Lr, NULL, f.L, NULL), 0);
  ref_l2l(&f, f.Lr);
  expect_close("L2L", f.L, f.Lr, f.t->n_cells * f.nc);
  op_close(&f);
}
END_TEST

START_TEST(test_operator_l2p) {
  op_fixture f;
  op_open(&f, FMMCL_FMM, 3000);
  ref_p2m(&f, f.Mr);
  ref_m2m(&f, f.Mr);
  ref_m2l(&f, f.Mr, f.Lr);
  ref_p2l(&f, f.Lr);
  ref_l2l(&f, f.Lr);
  ck_assert_int_eq(fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_L2P, NULL, f.Lr, NULL, NULL, f.out), 0);
  ref_l2p(&f, f.Lr, f.outr);
  expect_close("L2P", f.out, f.outr, 4 * f.t->n_targets);
  op_close(&f);
}
END_TEST

START_TEST(test_operator_m2p) {
  op_fixture f;
  op_open(&f, FMMCL_FMM, 3000);
  ref_p2m(&f, f.Mr);
  ref_m2m(&f, f.Mr);
  ck_assert_int_eq(fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_M2P, f.Mr, NULL, NULL, NULL, f.out), 0);
  ref_m2p(&f, &f.lists.w, f.Mr, f.outr);
  expect_close("M2P (W list)", f.out, f.outr, 4 * f.t->n_targets);
  op_close(&f);
}
END_TEST

START_TEST(test_operator_p2p) {
  op_fixture f;
  op_open(&f, FMMCL_FMM, 3000);
  ck_assert_int_eq(fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_P2P, NULL, NULL, NULL, NULL, f.out), 0);
  ref_p2p(&f, &f.lists.u, f.outr);
  expect_close("P2P (U list)", f.out, f.outr, 4 * f.t->n_targets);
  op_close(&f);
}
END_TEST

/* The treecode's multipoles about its sources' centres (its own P2M, the
 * FMM's M2M between those centres), and its lists driving the same M2P
 * and P2P kernels. */
START_TEST(test_operator_treecode_lists) {
  op_fixture f;
  op_open(&f, FMMCL_TREECODE, 3000);
  ref_p2m_m2m_treecode(&f, f.Mr);
  ck_assert_int_eq(
      fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_P2M | FMMCL_PHASE_M2M, NULL, NULL, f.M, NULL, NULL), 0);
  expect_close("P2M and M2M (treecode)", f.M, f.Mr, f.t->n_cells * f.nc);
  ck_assert_int_eq(fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_M2P, f.Mr, NULL, NULL, NULL, f.out), 0);
  ref_m2p_treecode(&f, f.Mr, f.outr);
  expect_close("M2P (far list)", f.out, f.outr, 4 * f.t->n_targets);
  memset(f.outr, 0, 4 * f.t->n_targets * sizeof(double));
  ck_assert_int_eq(fmmcl_fmm3d_debug_run(f.plan, f.q, FMMCL_PHASE_P2P, NULL, NULL, NULL, NULL, f.out), 0);
  ref_p2p_treecode(&f, f.outr);
  expect_close("P2P (near list)", f.out, f.outr, 4 * f.t->n_targets);
  op_close(&f);
}
END_TEST

/* ---- accuracy of whole plans --------------------------------------------- */

/* Double: the error falls with p, and stays under the rule the order is
 * chosen by (fmmcl_fmm3d_predicted_error), on every distribution. */
START_TEST(test_fmm_error_falls_with_order) {
  const int kind = _i;
  const int orders[] = {2, 4, 8};
  double last = INFINITY;
  for (int k = 0; k < 3; k++) {
    fmmcl_plan_options o = laplace(FMMCL_FMM, FMMCL_DOUBLE, orders[k]);
    errors e = distribution_errors(kind, 4000, &o);
    double bound = fmmcl_fmm3d_predicted_error(0, o.theta, orders[k]);
    ck_assert_msg(e.pot < last, "%s p=%d: error %.3e did not fall (was %.3e)", dist_name[kind], orders[k],
                  e.pot, last);
    ck_assert_msg(e.pot <= bound, "%s p=%d: error %.3e above the rule's %.3e", dist_name[kind], orders[k],
                  e.pot, bound);
    ck_assert_msg(e.grad <= 10 * bound, "%s p=%d: gradient error %.3e", dist_name[kind], orders[k], e.grad);
    last = e.pot;
  }
}
END_TEST

/* The tolerance a caller asks for is what the potential gets, and in
 * double the gradient (as a vector, relative L2) too; single precision
 * promises its gradient within 3 times the tolerance, as rounding of the
 * 1/r^2 terms approaches the tolerance near float's floor (1e-5). */
static void expect_tolerance_met(int kind, fmmcl_method method, fmmcl_precision prec, double tol, size_t n) {
  fmmcl_plan_options o = laplace(method, prec, 0);
  o.tolerance = tol;
  errors e = distribution_errors(kind, n, &o);
  const double grad_tol = prec == FMMCL_SINGLE ? 3 * tol : tol;
  ck_assert_msg(e.pot <= tol, "%s tol %.0e: potential error %.3e", dist_name[kind], tol, e.pot);
  ck_assert_msg(e.grad <= grad_tol, "%s tol %.0e: gradient error %.3e (<= %.0e)", dist_name[kind], tol,
                e.grad, grad_tol);
}

START_TEST(test_fmm_tolerance_double) {
  expect_tolerance_met(_i, FMMCL_FMM, FMMCL_DOUBLE, 1e-3, 3000);
  expect_tolerance_met(_i, FMMCL_FMM, FMMCL_DOUBLE, 1e-6, 3000);
  expect_tolerance_met(_i, FMMCL_FMM, FMMCL_DOUBLE, 1e-10, 2000);
}
END_TEST

START_TEST(test_fmm_tolerance_single) {
  expect_tolerance_met(_i, FMMCL_FMM, FMMCL_SINGLE, 1e-3, 3000);
  expect_tolerance_met(_i, FMMCL_FMM, FMMCL_SINGLE, 1e-5, 3000);
}
END_TEST

/* The tolerance holds in a grown root cube too (the FMM's on GPUs, forced
 * here): the levels fall elsewhere on the points, the leaves still hold at
 * most q. */
START_TEST(test_fmm_tolerance_grown_cube) {
  ck_assert_int_eq(setenv("FMMCL_FMM3D_GROW", "1.37", 1), 0);
  expect_tolerance_met(_i, FMMCL_FMM, FMMCL_DOUBLE, 1e-6, 3000);
  expect_tolerance_met(_i, FMMCL_FMM, FMMCL_SINGLE, 1e-3, 3000);
  unsetenv("FMMCL_FMM3D_GROW");
}
END_TEST

START_TEST(test_treecode_tolerance) {
  expect_tolerance_met(_i, FMMCL_TREECODE, FMMCL_DOUBLE, 1e-3, 3000);
  expect_tolerance_met(_i, FMMCL_TREECODE, FMMCL_DOUBLE, 1e-7, 3000);
  /* theta 0 (the default): one small enough for the maximum order */
  expect_tolerance_met(_i, FMMCL_TREECODE, FMMCL_DOUBLE, 1e-10, 2000);
}
END_TEST

/* The theta a treecode plan takes when the options leave it at 0: the
 * largest of 0.6, 0.5, 0.4, 0.3 whose order meets the tolerance; a theta
 * given is kept, and refused where no order meets the tolerance. */
static double chosen_theta(fmmcl_precision prec, double tol, double theta, fmmcl_status want) {
  enum { N = 500 };
  static double x[3 * N];
  make_points(UNIFORM, N, 11, x);
  fmmcl_plan_options o = laplace(FMMCL_TREECODE, prec, 0);
  o.tolerance = tol, o.theta = theta;
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan), want);
  if (want) return 0;
  fmmcl_plan_info info;
  ck_assert_int_eq(fmmcl_plan_describe(plan, &info), FMMCL_SUCCESS);
  ck_assert_msg(info.order >= 1 && info.order <= FMMCL_FMM3D_MAX_ORDER_DOUBLE, "order %d", info.order);
  fmmcl_plan_destroy(plan);
  return info.theta;
}

START_TEST(test_treecode_theta_chosen) {
  fmmcl_plan_options d;
  ck_assert_int_eq(fmmcl_plan_options_init(&d, FMMCL_LAPLACE_3D), FMMCL_SUCCESS);
  ck_assert(d.theta == 0);
  ck_assert(chosen_theta(FMMCL_SINGLE, 1e-4, 0, FMMCL_SUCCESS) == 0.6);
  ck_assert(chosen_theta(FMMCL_DOUBLE, 1e-6, 0, FMMCL_SUCCESS) == 0.6);
  ck_assert(chosen_theta(FMMCL_DOUBLE, 1e-10, 0, FMMCL_SUCCESS) == 0.5);
  ck_assert(chosen_theta(FMMCL_DOUBLE, 1e-10, 0.3, FMMCL_SUCCESS) == 0.3);
  chosen_theta(FMMCL_DOUBLE, 1e-10, 0.6, FMMCL_ERROR_UNSUPPORTED);
  ck_assert_msg(strstr(fmmcl_last_error(ctx), "lower theta"), "%s", fmmcl_last_error(ctx));
}
END_TEST

/* Treecode: error grows with theta and falls with p. */
START_TEST(test_treecode_theta_and_order) {
  const double thetas[] = {0.3, 0.5, 0.7};
  double last = 0;
  for (int k = 0; k < 3; k++) {
    fmmcl_plan_options o = laplace(FMMCL_TREECODE, FMMCL_DOUBLE, 4);
    o.theta = thetas[k];
    errors e = distribution_errors(PLUMMER, 4000, &o);
    ck_assert_msg(e.pot > last, "theta %.1f: error %.3e not above %.3e", thetas[k], e.pot, last);
    ck_assert_msg(e.pot <= fmmcl_fmm3d_predicted_error(1, thetas[k], 4),
                  "theta %.1f: error %.3e above the rule", thetas[k], e.pot);
    last = e.pot;
  }
  const int orders[] = {2, 4, 8};
  last = INFINITY;
  for (int k = 0; k < 3; k++) {
    fmmcl_plan_options o = laplace(FMMCL_TREECODE, FMMCL_DOUBLE, orders[k]);
    errors e = distribution_errors(UNIFORM, 4000, &o);
    ck_assert_msg(e.pot < last, "p=%d: error %.3e did not fall", orders[k], e.pot);
    last = e.pot;
  }
}
END_TEST

/* ---- degenerate inputs ----------------------------------------------------- */

/* Every pair coincides, so every term is the excluded singular one: the tree
 * stops at its depth limit with one overfull leaf, and the sum is 0. */
START_TEST(test_all_points_coincide) {
  const size_t n = 400;
  double *x = malloc(3 * n * sizeof *x), *q = malloc(n * sizeof *q), *pot = malloc(n * sizeof *pot),
         *grad = malloc(3 * n * sizeof *grad);
  for (size_t i = 0; i < 3 * n; i++) x[i] = 0.3;
  make_charges(n, 5, q);
  for (int m = 0; m < 2; m++)
    for (int prec = 0; prec < 2; prec++) {
      fmmcl_plan_options o = laplace(m ? FMMCL_TREECODE : FMMCL_FMM, prec ? FMMCL_DOUBLE : FMMCL_SINGLE, 4);
      fmmcl_plan plan;
      ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
      const fmmcl_tree3d *t;
      int p;
      ck_assert_int_eq(fmmcl_fmm3d_debug_tree(plan, &t, &p), FMMCL_SUCCESS);
      ck_assert(t->depth_limit_reached);
      ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, grad), FMMCL_SUCCESS);
      for (size_t i = 0; i < n; i++) {
        ck_assert(pot[i] == 0);
        ck_assert(grad[3 * i] == 0 && grad[3 * i + 1] == 0 && grad[3 * i + 2] == 0);
      }
      fmmcl_plan_destroy(plan);
    }
  free(x), free(q), free(pot), free(grad);
}
END_TEST

/* Two points 2e-11 apart across a leaf face (x = 0.5, the root's centre,
 * on every level), closer than float resolves there without the offsets'
 * low parts: they round to one point, and the P2P, which guards r = 0 in
 * the target's own leaf and where a moved target touches a source leaf,
 * must drop that pair rather than give inf; with the sources streamed
 * from global memory or staged in local memory (TILE). */
START_TEST(test_pair_across_a_face) {
  const size_t n = 3004;
  double *x = malloc(3 * n * sizeof *x), *q = malloc(n * sizeof *q), *pot = malloc(n * sizeof *pot),
         *grad = malloc(3 * n * sizeof *grad);
  make_points(UNIFORM, n, 10, x);
  const double fixed[4][3] = {{0, 0, 0}, {1, 1, 1}, {0.5 - 1e-11, 0.3, 0.3}, {0.5 + 1e-11, 0.3, 0.3}};
  for (int k = 0; k < 4; k++)
    for (int c = 0; c < 3; c++) x[3 * (n - 4 + k) + c] = fixed[k][c];
  make_charges(n, 11, q);
  static const char *const tilings[] = {"WGS=32 UNROLL=4 TPW=1 TILE=0", "WGS=32 UNROLL=4 TPW=2 TILE=1"};
  ck_assert_int_eq(fmmcl_tuning_override(ctx, "fmm3d_p2p", tilings[_i]), FMMCL_SUCCESS);
  fmmcl_plan_options o = laplace(FMMCL_FMM, FMMCL_SINGLE, 0);
  o.leaf_size = 64;
  fmmcl_plan plan;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_msg(fmmcl_plan_execute(plan, q, pot, grad) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(
        isfinite(pot[i]) && isfinite(grad[3 * i]) && isfinite(grad[3 * i + 1]) && isfinite(grad[3 * i + 2]),
        "%s: target %zu", tilings[_i], i);
  fmmcl_plan_destroy(plan);
  ck_assert_int_eq(fmmcl_tuning_override(ctx, "fmm3d_p2p", NULL), FMMCL_SUCCESS);
  free(x), free(q), free(pot), free(grad);
}
END_TEST

/* Two unit clusters 1000 apart: a tree deep on both sides and empty between. */
START_TEST(test_two_far_clusters) {
  const size_t n = 3000;
  double *x = malloc(3 * n * sizeof *x), *q = malloc(n * sizeof *q);
  make_points(UNIFORM, n, 6, x);
  for (size_t i = n / 2; i < n; i++)
    for (int c = 0; c < 3; c++) x[3 * i + c] += 1000;
  make_charges(n, 7, q);
  for (int m = 0; m < 2; m++) {
    fmmcl_plan_options o = laplace(m ? FMMCL_TREECODE : FMMCL_FMM, FMMCL_DOUBLE, 0);
    o.tolerance = 1e-6;
    errors e = plan_errors(&o, n, x, q, 0, NULL);
    ck_assert_msg(e.pot <= 1e-6 && e.grad <= 1e-5, "method %d: errors %.3e %.3e", m, e.pot, e.grad);
  }
  free(x), free(q);
}
END_TEST

/* Fewer points than a leaf holds: the root is the only leaf, all P2P. */
START_TEST(test_small_inputs) {
  double x[3 * 20], q[20];
  make_points(UNIFORM, 20, 8, x);
  make_charges(20, 9, q);
  for (int m = 0; m < 2; m++)
    for (size_t n = 1; n <= 20; n += 19) {
      fmmcl_plan_options o = laplace(m ? FMMCL_TREECODE : FMMCL_FMM, FMMCL_DOUBLE, 3);
      double pot[20], grad[60];
      fmmcl_plan plan;
      ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
      ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, grad), FMMCL_SUCCESS);
      fmmcl_plan_destroy(plan);
      if (n == 1) {
        ck_assert(pot[0] == 0 && grad[0] == 0);
      } else {
        errors e = plan_errors(&o, n, x, q, 0, NULL);
        ck_assert_msg(e.pot < 1e-13 && e.grad < 1e-13, "N=%zu: %.3e %.3e", n, e.pot, e.grad);
      }
    }
}
END_TEST

/* Targets apart from the sources, some of them on a source. */
START_TEST(test_separate_targets) {
  const size_t ns = 3000, nt = 2500;
  double *src = malloc(3 * ns * sizeof *src), *tgt = malloc(3 * nt * sizeof *tgt),
         *q = malloc(ns * sizeof *q);
  make_points(PLUMMER, ns, 10, src);
  make_points(UNIFORM, nt, 11, tgt);
  for (size_t i = 0; i < 3 * nt; i++) tgt[i] = 4 * tgt[i] - 2;
  memcpy(tgt, src, 3 * 100 * sizeof *src); /* 100 targets on sources: the r = 0 terms are excluded */
  make_charges(ns, 12, q);
  for (int m = 0; m < 2; m++)
    for (int prec = 0; prec < 2; prec++) {
      fmmcl_plan_options o = laplace(m ? FMMCL_TREECODE : FMMCL_FMM, prec ? FMMCL_DOUBLE : FMMCL_SINGLE, 0);
      o.tolerance = prec ? 1e-8 : 1e-4;
      errors e = plan_errors(&o, ns, src, q, nt, tgt);
      ck_assert_msg(e.pot <= o.tolerance && e.grad <= 10 * o.tolerance, "method %d prec %d: %.3e %.3e", m,
                    prec, e.pot, e.grad);
    }
  free(src), free(tgt), free(q);
}
END_TEST

/* ---- plans ------------------------------------------------------------------ */

/* A plan executed again with new charges reuses its tree and lists and is as
 * accurate; its timings name every phase. */
START_TEST(test_reexecute_new_charges) {
  const size_t n = 3000;
  double *x = malloc(3 * n * sizeof *x), *q = malloc(n * sizeof *q), *pot = malloc(n * sizeof *pot),
         *ref = malloc(n * sizeof *ref);
  make_points(ELLIPSOID, n, 13, x);
  fmmcl_plan_options o = laplace(FMMCL_FMM, FMMCL_DOUBLE, 0);
  o.tolerance = 1e-6;
  fmmcl_plan plan;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
  for (unsigned k = 0; k < 3; k++) {
    make_charges(n, 20 + k, q);
    ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
    ck_assert_int_eq(fmmcl_reference_direct(&o, n, x, q, 0, NULL, ref, NULL), FMMCL_SUCCESS);
    double e = fmmcl_test_rel_l2(pot, ref, n);
    ck_assert_msg(e <= 1e-6, "execution %u: error %.3e", k, e);
  }
  fmmcl_phase_time t[FMMCL_MAX_PHASES];
  size_t count;
  ck_assert_int_eq(fmmcl_plan_timings(plan, t, FMMCL_MAX_PHASES, &count), FMMCL_SUCCESS);
  const char *want[] = {"build", "tree", "lists", "upload", "p2m", "m2m",     "m2l",
                        "p2l",   "l2l",  "l2p",   "m2p",    "p2p", "download"};
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    int found = 0;
    for (size_t i = 0; i < count; i++) found |= strcmp(t[i].name, want[w]) == 0 && t[i].seconds >= 0;
    ck_assert_msg(found, "no timing for phase %s", want[w]);
  }
  fmmcl_plan_destroy(plan);
  free(x), free(q), free(pot), free(ref);
}
END_TEST

/* A plan reports the leaf size it took: the given one, else its choice;
 * on a GPU the FMM's by its order (cheap M2Ls at low orders: smaller
 * leaves; the split threshold of fmm3d_setup.c's H100 rates), the
 * treecode's and a CPU's fixed. */
START_TEST(test_leaf_size_chosen) {
  fmmcl_device_info gpu = {0}, cpu = {0};
  gpu.is_gpu = 1;
  ck_assert_uint_eq(fmmcl_fmm3d_default_leaf_size(&gpu, 0, 5, 4), 141);
  ck_assert_uint_eq(fmmcl_fmm3d_default_leaf_size(&gpu, 0, 8, 4), 318);
  ck_assert_uint_eq(fmmcl_fmm3d_default_leaf_size(&gpu, 0, 17, 8), 980);
  ck_assert_uint_eq(fmmcl_fmm3d_default_leaf_size(&gpu, 1, 5, 4), 256);
  ck_assert_uint_eq(fmmcl_fmm3d_default_leaf_size(&cpu, 0, 5, 4), 256);
  enum { N = 2000 };
  double *x = malloc(3 * N * sizeof *x);
  make_points(UNIFORM, N, 7, x);
  for (int given = 0; given <= 64; given += 64) {
    fmmcl_plan_options o = laplace(FMMCL_FMM, FMMCL_SINGLE, 0);
    o.tolerance = 1e-3;
    o.leaf_size = given;
    fmmcl_plan plan;
    ck_assert_msg(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                  fmmcl_last_error(ctx));
    fmmcl_plan_info info;
    ck_assert_int_eq(fmmcl_plan_describe(plan, &info), FMMCL_SUCCESS);
    fmmcl_device_info d;
    ck_assert_int_eq(fmmcl_context_device(ctx, &d), FMMCL_SUCCESS);
    const int want = given ? given : (int)fmmcl_fmm3d_default_leaf_size(&d, 0, info.order, 4);
    ck_assert_int_eq(info.leaf_size, want);
    fmmcl_plan_destroy(plan);
  }
  free(x);
}
END_TEST

/* The root cube's growth makes the points' extent k whole cells of some
 * level (F = 2^l / k in [1, 2)), the k whose n / k^3 is nearest (in
 * ratio) q / sqrt 8, evenly spread points' best leaf. */
START_TEST(test_cube_growth) {
  const size_t ns[] = {1000, 1000000, 1048576, 8388608, 10000000, 123457};
  const size_t qs[] = {141, 318, 980};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
    for (size_t j = 0; j < sizeof qs / sizeof *qs; j++) {
      const double f = fmmcl_fmm3d_cube_growth(ns[i], qs[j]), best = (double)qs[j] / sqrt(8.0);
      ck_assert_msg(f >= 1 && f < 2, "n %zu q %zu: growth %g", ns[i], qs[j], f);
      /* some level l has k = 2^l / f whole cells across, k the nearest */
      int found = 0;
      for (int l = 0; l <= 21 && !found; l++) {
        const double k = round(ldexp(1.0, l) / f);
        if (k < 1 || fabs(ldexp(1.0, l) / f - k) > 1e-9) continue;
        const double off = fabs(log((double)ns[i] / (k * k * k) / best));
        found = off <= fabs(log((double)ns[i] / ((k + 1) * (k + 1) * (k + 1)) / best)) + 1e-12 &&
                (k == 1 || off <= fabs(log((double)ns[i] / ((k - 1) * (k - 1) * (k - 1)) / best)) + 1e-12);
      }
      ck_assert_msg(found, "n %zu q %zu: growth %g gives no nearest whole number of cells", ns[i], qs[j], f);
    }
  /* 1e7 points, order 8's leaves of 318: 45 cells of level 6 across */
  ck_assert_double_eq_tol(fmmcl_fmm3d_cube_growth(10000000, 318), 64.0 / 45.0, 1e-12);
}
END_TEST

START_TEST(test_invalid_options) {
  double x[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  fmmcl_plan plan;
  fmmcl_plan_options o = laplace(FMMCL_FMM, FMMCL_DOUBLE, FMMCL_FMM3D_MAX_ORDER_DOUBLE + 1);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  o = laplace(FMMCL_FMM, FMMCL_SINGLE, FMMCL_FMM3D_MAX_ORDER_SINGLE + 1);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  o = laplace(FMMCL_FMM, FMMCL_DOUBLE, -1);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  o = laplace(FMMCL_FMM, FMMCL_SINGLE, 0);
  o.tolerance = 1e-8;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  o = laplace(FMMCL_FMM, FMMCL_DOUBLE, 4);
  o.softening = 0.1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  o = laplace(FMMCL_TREECODE, FMMCL_DOUBLE, 4);
  o.theta = 1.5;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  o = laplace(FMMCL_FMM, FMMCL_DOUBLE, 4);
  o.leaf_size = -2;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 3, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  /* the rule picks a higher order for a tighter tolerance */
  ck_assert(fmmcl_fmm3d_predicted_error(0, 0.5, 10) < fmmcl_fmm3d_predicted_error(0, 0.5, 5));
}
END_TEST

static Suite *fmm3d_suite(void) {
  Suite *s = suite_create("fmm3d");
  TCase *ops = tcase_create("operators");
  tcase_add_checked_fixture(ops, setup, teardown);
  tcase_add_loop_test(ops, test_operator_p2m, 0, (int)(sizeof p2m_cases / sizeof p2m_cases[0]));
  tcase_add_test(ops, test_operator_m2m);
  tcase_add_test(ops, test_operator_m2l);
  tcase_add_loop_test(ops, test_operator_m2l_batches, 0, (int)(sizeof m2l_cases / sizeof m2l_cases[0]));
  tcase_add_test(ops, test_operator_p2l);
  tcase_add_test(ops, test_operator_l2l);
  tcase_add_test(ops, test_operator_l2p);
  tcase_add_test(ops, test_operator_m2p);
  tcase_add_test(ops, test_operator_p2p);
  tcase_add_test(ops, test_operator_treecode_lists);
  suite_add_tcase(s, ops);
  TCase *acc = tcase_create("accuracy");
  tcase_add_checked_fixture(acc, setup, teardown);
  tcase_add_loop_test(acc, test_fmm_error_falls_with_order, 0, N_DIST);
  tcase_add_loop_test(acc, test_fmm_tolerance_double, 0, N_DIST);
  tcase_add_loop_test(acc, test_fmm_tolerance_single, 0, N_DIST);
  tcase_add_loop_test(acc, test_fmm_tolerance_grown_cube, 0, N_DIST);
  tcase_add_loop_test(acc, test_treecode_tolerance, 0, N_DIST);
  tcase_add_test(acc, test_treecode_theta_and_order);
  tcase_add_test(acc, test_treecode_theta_chosen);
  suite_add_tcase(s, acc);
  TCase *deg = tcase_create("degenerate and plans");
  tcase_add_checked_fixture(deg, setup, teardown);
  tcase_add_test(deg, test_all_points_coincide);
  tcase_add_test(deg, test_two_far_clusters);
  tcase_add_loop_test(deg, test_pair_across_a_face, 0, 2);
  tcase_add_test(deg, test_small_inputs);
  tcase_add_test(deg, test_separate_targets);
  tcase_add_test(deg, test_reexecute_new_charges);
  tcase_add_test(deg, test_invalid_options);
  tcase_add_test(deg, test_leaf_size_chosen);
  tcase_add_test(deg, test_cube_growth);
  suite_add_tcase(s, deg);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(fmm3d_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
