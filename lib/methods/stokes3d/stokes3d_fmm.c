/* stokes3d_fmm.c — the Stokeslet and stresslet velocity and pressure: the
 * near field (U list) summed exactly with the Stokes pair
 * (stokes3d_near.c), the far field from four 3D Laplace FMMs with
 * gradients (harmonic decomposition; charges, and dipoles for
 * stresslets) run without their P2P, on one internal plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "methods/laplace3d/fmm3d.h"
#include "methods/stokes3d/stokes3d.h"
#include "plan/registry.h"

/* With phi_k = sum_j f_jk / r and psi = sum_j (y_j . f_j) / r,
 *   u_i = phi_i - x_k d_i phi_k + d_i psi,   p = -2 d_k phi_k.
 * A stresslet (s, n) at y adds to phi_k the dipole -(s_k n + n_k s) and to
 * psi the dipole -((y . s) n + (y . n) s) (dipole d: d . r / r^3): then
 * x_k d_i phi_k - d_i psi leaves -6 r_i (r . s)(r . n) / r^5 plus
 * ((r . s) n_i + (r . n) s_i) / r^3, which phi_i's own dipole term cancels,
 * and -2 d_k phi_k gives 4 (s . n) / r^3 - 12 (r . s)(r . n) / r^5: the
 * same combination sums both kinds of source.
 *
 * x_k d_i phi_k and d_i psi each grow with |x| and cancel to the
 * Stokeslet's (x - y) . f term, so every coordinate is taken relative to
 * a centre among the points, which keeps |x| and |y| at the set's size.
 * Near pairs, where that cancellation would cost the most digits (|x| / r),
 * never enter it: the Stokes pair sums them. */
typedef struct {
  fmmcl_plan laplace; /* LAPLACE_3D FMM with gradient on the centred points */
  double centre[3];
  double *targets; /* centred targets (m x 3) */
  double *sources; /* centred sources (n x 3) */
  double *q, *pot; /* n charges; 4 potentials of m */
  double *dip;     /* n dipoles (stresslet plans) */
  double *grad;    /* 4 gradients of m x 3 */
  double *near_u, *near_p; /* the near field: m x 3, m */
  stokes_near near;
  stokes_far far;
} stokes_state;

/* The far field's error in u at a target x is the Laplace FMMs' error for
 * charges (y - x) . f (the four sums are one linear operator): |y - x|
 * times the error of a gradient, about p + 1 times the potential's error
 * that the Laplace order rule predicts (fmmcl_fmm3d_predicted_error), per
 * unit of the Stokeslet's own 1/|y - x|. So the order is the smallest p
 * with (p + 1) err(p) <= tol (measured in benchmarks/README.md); 0 when
 * none up to max is. */
static int far_order(double tol, int max) {
  for (int p = 1; p <= max; p++)
    if ((p + 1) * fmmcl_fmm3d_predicted_error(0, 0, p) <= tol) return p;
  return 0;
}

static fmmcl_status stokes_create(fmmcl_plan plan, const double *sources, const double *targets) {
  fmmcl_context ctx = plan->ctx;
  stokes_state *s = calloc(1, sizeof *s);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->impl = s;
  const size_t n = plan->n_sources, m = plan->n_targets;
  /* the coordinate-wise median: a few far points leave it among the
   * bulk, whose |x| (and the cancellation) then stays at the bulk's size */
  double *v = malloc((n + m) * sizeof *v);
  if (!v) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu points", n + m);
  for (int c = 0; c < 3; c++) {
    for (size_t i = 0; i < n + m; i++) v[i] = i < n ? sources[3 * i + c] : targets[3 * (i - n) + c];
    s->centre[c] = fmmcl_median(v, n + m);
  }
  free(v);
  s->sources = malloc(3 * n * sizeof(double));
  s->targets = malloc(3 * m * sizeof(double));
  s->q = malloc(n * sizeof(double));
  s->pot = malloc(4 * m * sizeof(double));
  s->grad = malloc(12 * m * sizeof(double));
  s->dip = plan->opt.stresslets ? malloc(3 * n * sizeof(double)) : NULL;
  if (!s->sources || !s->targets || !s->q || !s->pot || !s->grad || (plan->opt.stresslets && !s->dip))
    return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu points", n + m);
  for (size_t i = 0; i < 3 * n; i++) s->sources[i] = sources[i] - s->centre[i % 3];
  for (size_t i = 0; i < 3 * m; i++) s->targets[i] = targets[i] - s->centre[i % 3];
  s->near_u = malloc(3 * m * sizeof(double));
  s->near_p = malloc(m * sizeof(double));
  if (!s->near_u || !s->near_p)
    return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu points", m);
  fmmcl_plan_options lo;
  fmmcl_plan_options_init(&lo, FMMCL_LAPLACE_3D);
  lo.method = FMMCL_FMM;
  lo.precision = plan->opt.precision;
  const double tol = plan->opt.tolerance > 0               ? plan->opt.tolerance
                     : plan->opt.precision == FMMCL_DOUBLE ? 1e-6
                                                           : 1e-4;
  const int max = plan->opt.precision == FMMCL_SINGLE ? FMMCL_FMM3D_MAX_ORDER_SINGLE : FMMCL_FMM3D_MAX_ORDER_DOUBLE;
  lo.order = plan->opt.order > 0 ? plan->opt.order : far_order(tol, max);
  if (lo.order == 0)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "STOKES_3D FMM tolerance %g: its Laplace FMMs would need an order above %d, the most %s "
                      "precision allows; use %s",
                      tol, max, plan->opt.precision == FMMCL_SINGLE ? "single" : "double",
                      plan->opt.precision == FMMCL_SINGLE ? "FMMCL_DOUBLE or a tolerance >= 1e-4"
                                                          : "a larger tolerance");
  lo.leaf_size = plan->opt.leaf_size;
  lo.gradient = 1;
  lo.dipoles = plan->opt.stresslets;
  fmmcl_status st = fmmcl_plan_create(ctx, &lo, n, s->sources, m, plan->targets_are_sources ? NULL : s->targets,
                                      &s->laplace);
  if (!st) st = fmmcl_stokes3d_near_create(plan, s->laplace, &s->near);
  return st ? st : fmmcl_stokes3d_far_create(plan, s->laplace, &s->far);
}

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* The far fields of the four Laplace sums: phi_k (k = 0, 1, 2) from f_k,
 * psi from y . f, with the stresslets' dipoles (see the top of the file)
 * where there are any (sn: strengths, orientations): each density's
 * upward pass, the four translated together, each one's downward pass. */
static fmmcl_status laplace_sums(fmmcl_plan plan, stokes_state *s, const double *f, const double *ss,
                                 const double *sn) {
  const size_t n = plan->n_sources, m = plan->n_targets;
  fmmcl_plan_restart_phases(s->laplace);
  double t0 = fmmcl_wall_seconds();
  fmmcl_status st = FMMCL_SUCCESS;
  for (int k = 0; k < 4 && !st; k++) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t j = 0; j < n; j++) s->q[j] = !f ? 0 : k < 3 ? f[3 * j + k] : dot3(s->sources + 3 * j, f + 3 * j);
    if (ss) {
#pragma omp parallel for schedule(static) if (n > 65536)
      for (size_t j = 0; j < n; j++) {
        const double *a = ss + 3 * j, *b = sn + 3 * j, *y = s->sources + 3 * j;
        const double wa = k < 3 ? b[k] : dot3(y, b), wb = k < 3 ? a[k] : dot3(y, a);
        for (int c = 0; c < 3; c++) s->dip[3 * j + c] = -(wb * b[c] + wa * a[c]);
      }
    }
    st = fmmcl_fmm3d_far_up(s->laplace, s->q, ss ? s->dip : NULL, s->far.M[k], s->far.L[k]);
  }
  if (!st) st = fmmcl_stokes3d_far_m2l(plan, s->laplace, &s->far);
  for (int k = 0; k < 4 && !st; k++)
    st = fmmcl_fmm3d_far_down(s->laplace, s->far.M[k], s->far.L[k], s->pot + (size_t)k * m,
                              s->grad + (size_t)k * 3 * m);
  if (st) return st;
  fmmcl_plan_record(plan, "laplace_far", fmmcl_wall_seconds() - t0);
  /* the Laplace phases of all four, as this plan's (names are static) */
  for (size_t i = 0; i < s->laplace->n_phases; i++)
    if (strcmp(s->laplace->phases[i].name, "build") != 0 && strcmp(s->laplace->phases[i].name, "update") != 0)
      fmmcl_plan_record(plan, s->laplace->phases[i].name, s->laplace->phases[i].seconds);
  return FMMCL_SUCCESS;
}

static fmmcl_status stokes_evaluate(fmmcl_plan plan, const fmmcl_sources_data *in, fmmcl_targets_data *out) {
  stokes_state *s = plan->impl;
  const size_t m = plan->n_targets;
  fmmcl_status st = fmmcl_stokes3d_near_run(plan, s->laplace, &s->near, in->forces, in->stresslet_strengths,
                                            in->stresslet_orientations, s->near_u, s->near_p);
  if (!st) st = laplace_sums(plan, s, in->forces, in->stresslet_strengths, in->stresslet_orientations);
  if (st) return st;
  double t0 = fmmcl_wall_seconds();
  const double *phi = s->pot, *g = s->grad; /* g + 3 m k: d phi_k; g + 9 m: d psi */
#pragma omp parallel for schedule(static) if (m > 65536)
  for (size_t i = 0; i < m; i++) {
    const double *x = s->targets + 3 * i;
    for (int a = 0; a < 3 && out->velocity; a++) {
      double u = s->near_u[3 * i + (size_t)a] + phi[(size_t)a * m + i] + g[9 * m + 3 * i + (size_t)a];
      for (int k = 0; k < 3; k++) u -= x[k] * g[(size_t)k * 3 * m + 3 * i + (size_t)a];
      out->velocity[3 * i + (size_t)a] = u;
    }
    if (out->pressure)
      out->pressure[i] = s->near_p[i] - 2 * (g[3 * i] + g[3 * m + 3 * i + 1] + g[6 * m + 3 * i + 2]);
  }
  fmmcl_plan_record(plan, "combine", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}

static fmmcl_status stokes_execute(fmmcl_plan plan, const double *charges, double *potential,
                                   double *gradient) {
  (void)charges, (void)potential, (void)gradient;
  return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                    "fmmcl_plan_execute: the STOKES_3D kernel takes forces: use fmmcl_plan_evaluate");
}

static void stokes_destroy(fmmcl_plan plan) {
  stokes_state *s = plan->impl;
  if (!s) return;
  fmmcl_stokes3d_near_release(&s->near);
  fmmcl_stokes3d_far_release(&s->far);
  fmmcl_plan_destroy(s->laplace);
  free(s->near_u), free(s->near_p);
  free(s->sources), free(s->targets), free(s->q), free(s->pot), free(s->grad), free(s->dip);
  free(s);
  plan->impl = NULL;
}

static int stokes_order(fmmcl_plan plan) {
  stokes_state *s = plan->impl;
  fmmcl_plan_info info;
  return s && s->laplace && fmmcl_plan_describe(s->laplace, &info) == FMMCL_SUCCESS ? info.order : 0;
}

static fmmcl_status stokes_counts(fmmcl_plan plan, const char *phase, double *work) {
  stokes_state *s = plan->impl;
  fmmcl_status st = fmmcl_plan_counts(s->laplace, phase, work);
  /* four Laplace far fields per evaluation, one Stokes near field */
  if (!st && strcmp(phase, "p2p") != 0) *work *= 4;
  return st;
}

/* Close pairs, where rounding matters (fmmcl_plan_rounding_estimate), are
 * the near field's, summed in the Laplace plan's leaf frames with its
 * offsets' low parts: its frames and its offsets' rounding. The far
 * field's cancellation of x_k d_i phi_k against d_i psi loses only |x| / R
 * to rounding, R at least a leaf's width. */
static double stokes_frame_size(fmmcl_plan plan, int target, size_t index) {
  const stokes_state *s = plan->impl;
  return s->laplace->ops->frame_size(s->laplace, target, index);
}

static double stokes_offset_rounding(fmmcl_plan plan) {
  const stokes_state *s = plan->impl;
  return s->laplace->ops->offset_rounding(s->laplace);
}

const fmmcl_method_ops fmmcl_stokes3d_fmm_ops = {.name = "stokes3d_fmm",
                                                 .create = stokes_create,
                                                 .execute = stokes_execute,
                                                 .destroy = stokes_destroy,
                                                 .counts = stokes_counts,
                                                 .order = stokes_order,
                                                 .evaluate = stokes_evaluate,
                                                 .frame_size = stokes_frame_size,
                                                 .offset_rounding = stokes_offset_rounding};
