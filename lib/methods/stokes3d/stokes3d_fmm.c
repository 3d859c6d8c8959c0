/* stokes3d_fmm.c — the Stokeslet and stresslet FMM: velocity and pressure
 * from the near field (U list) summed exactly with the Stokes pair
 * (stokes3d_near.c) and the far fields of four 3D Laplace densities with
 * gradients (harmonic decomposition; charges, and dipoles for
 * stresslets; stokes3d_far.c), all on one internal Laplace FMM plan and
 * combined on the device; its order rule and its rounding. */
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
  double *pressure; /* m: where the caller asks for the velocity alone */
  stokes_near near;
  stokes_far far;
} stokes_state;

/* The far field's error in u at a target x is the Laplace FMMs' error for
 * charges (y - x) . f (the four sums are one linear operator): |y - x|
 * times the error of a gradient, about p + 1 times the potential's error
 * that the Laplace order rule predicts (fmmcl_fmm3d_predicted_error), per
 * unit of the Stokeslet's own 1/|y - x|. That product alone has no room
 * to spare (measured up to 0.8 of it), so the order is the smallest p with
 * (p + 1) err(p) <= tol / 2, the margin of about 2 the Laplace rule keeps
 * (benchmarks/README.md); 0 when none up to max is. */
static int far_order(double tol, int max) {
  for (int p = 1; p <= max; p++)
    if (2 * (p + 1) * fmmcl_fmm3d_predicted_error(0, 0, p) <= tol) return p;
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
  double *y = malloc(3 * (n ? n : 1) * sizeof(double)), *x = malloc(3 * (m ? m : 1) * sizeof(double));
  s->pressure = malloc((m ? m : 1) * sizeof(double));
  if (!y || !x || !s->pressure) {
    free(y), free(x);
    return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu points", n + m);
  }
  for (size_t i = 0; i < 3 * n; i++) y[i] = sources[i] - s->centre[i % 3];
  for (size_t i = 0; i < 3 * m; i++) x[i] = targets[i] - s->centre[i % 3];
  fmmcl_plan_options lo;
  fmmcl_plan_options_init(&lo, FMMCL_LAPLACE_3D);
  lo.method = FMMCL_FMM;
  lo.precision = plan->opt.precision;
  const double tol = plan->opt.tolerance > 0               ? plan->opt.tolerance
                     : plan->opt.precision == FMMCL_DOUBLE ? 1e-6
                                                           : 1e-4;
  const int max =
      plan->opt.precision == FMMCL_SINGLE ? FMMCL_FMM3D_MAX_ORDER_SINGLE : FMMCL_FMM3D_MAX_ORDER_DOUBLE;
  lo.order = plan->opt.order > 0 ? plan->opt.order : far_order(tol, max);
  if (lo.order == 0) {
    free(y), free(x);
    return fmmcl_fail(
        ctx, FMMCL_ERROR_UNSUPPORTED,
        "STOKES_3D FMM tolerance %g: its Laplace FMMs would need an order above %d, the most %s "
        "precision allows; use %s",
        tol, max, plan->opt.precision == FMMCL_SINGLE ? "single" : "double",
        plan->opt.precision == FMMCL_SINGLE ? "FMMCL_DOUBLE or a tolerance >= 1e-4" : "a larger tolerance");
  }
  /* the leaves the Stokes FMM was measured with (its near field's pairs
   * cost several Laplace pairs; the Laplace FMM's choice by order does not
   * count that) */
  lo.leaf_size =
      plan->opt.leaf_size > 0 ? plan->opt.leaf_size : (int)fmmcl_fmm3d_fixed_leaf_size(&ctx->dev.info);
  lo.gradient = 1;
  lo.dipoles = plan->opt.stresslets;
  fmmcl_status st = fmmcl_plan_create(ctx, &lo, n, y, m, plan->targets_are_sources ? NULL : x, &s->laplace);
  if (!st)
    st = fmmcl_stokes3d_near_create(plan, s->laplace, &s->near, y, plan->targets_are_sources ? NULL : x);
  if (!st) st = fmmcl_stokes3d_far_create(plan, s->laplace, &s->far);
  free(y), free(x);
  return st;
}

static fmmcl_status stokes_evaluate(fmmcl_plan plan, const fmmcl_sources_data *in, fmmcl_targets_data *out) {
  stokes_state *s = plan->impl;
  fmmcl_status st = fmmcl_stokes3d_near_run(plan, s->laplace, &s->near, in->forces, in->stresslet_strengths,
                                            in->stresslet_orientations);
  if (!st) st = fmmcl_stokes3d_far_run(plan, s->laplace, &s->near, &s->far);
  if (!st)
    st = fmmcl_stokes3d_results(plan, s->laplace, &s->near, s->far.out, out->velocity,
                                out->pressure ? out->pressure : s->pressure);
  return st;
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
  free(s->pressure);
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
  /* the near field sums the Laplace plan's P2P pairs once; every far
   * phase treats four densities */
  const int near = strcmp(phase, "near") == 0 || strcmp(phase, "p2p") == 0;
  fmmcl_status st = fmmcl_plan_counts(s->laplace, near ? "p2p" : phase, work);
  if (!st && !near) *work *= 4;
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
