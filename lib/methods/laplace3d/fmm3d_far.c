/* fmm3d_far.c — the far field alone of a 3D Laplace FMM plan (every phase
 * but the P2P), for a method that sums the near field with its own kernel
 * over the plan's U list (the Stokes FMM), and that method's access to
 * the plan's state. */
#include <stdlib.h>

#include "methods/laplace3d/fmm3d.h"
#include "plan/registry.h"

fmm3d_state *fmmcl_fmm3d_state_of(fmmcl_plan plan) {
  if (!plan || !(fmmcl_plan_runs(plan, "fmm3d") || fmmcl_plan_runs(plan, "fmm3d_ext"))) return NULL;
  return plan->impl;
}

fmmcl_status fmmcl_fmm3d_far_field(fmmcl_plan plan, const double *charges, const double *dipoles,
                                   double *potential, double *gradient) {
  fmm3d_state *s = fmmcl_fmm3d_state_of(plan);
  if (!s) return fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "a far field needs a 3D Laplace FMM plan");
  fmmcl_status st = fmmcl_fmm3d_upload_charges(plan, s, charges);
  if (!st && s->dipoles) st = fmmcl_fmm3d_upload_dipoles(plan, s, dipoles);
  if (!st) st = fmmcl_fmm3d_run_phases(plan, s, FMMCL_FMM3D_FMM_PHASES & ~(unsigned)FMMCL_PHASE_P2P);
  if (!st) st = fmmcl_fmm3d_download(plan, s, potential, gradient);
  return st;
}
