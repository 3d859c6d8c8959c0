/* fmm3d_far.c — the far field alone of a 3D Laplace FMM plan (every phase
 * but the P2P), in three steps on expansion buffers the caller owns, so
 * that several densities share one plan and a translation of all of them
 * at once can replace the M2L step (the Stokes FMM, which sums the near
 * field with its own kernel over the plan's U list). */
#include <stdlib.h>

#include "methods/laplace3d/fmm3d.h"
#include "plan/registry.h"

fmm3d_state *fmmcl_fmm3d_state_of(fmmcl_plan plan) {
  if (!plan || !(fmmcl_plan_runs(plan, "fmm3d") || fmmcl_plan_runs(plan, "fmm3d_ext"))) return NULL;
  return plan->impl;
}

/* Runs the phases in mask (and, with charges, the upload first) with M and
 * L in place of the plan's own: kernels take their buffers at each launch,
 * so the swap lasts exactly as long as this call. */
static fmmcl_status on_expansions(fmmcl_plan plan, cl_mem M, cl_mem L, unsigned mask, const double *charges,
                                  const double *dipoles) {
  fmm3d_state *s = fmmcl_fmm3d_state_of(plan);
  if (!s) return fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "a far field needs a 3D Laplace FMM plan");
  cl_mem own_M = s->M, own_L = s->L;
  s->M = M, s->L = L;
  fmmcl_status st = charges ? fmmcl_fmm3d_upload_charges(plan, s, charges) : FMMCL_SUCCESS;
  if (!st && charges && s->dipoles) st = fmmcl_fmm3d_upload_dipoles(plan, s, dipoles);
  if (!st) st = fmmcl_fmm3d_run_phases(plan, s, mask);
  s->M = own_M, s->L = own_L;
  return st;
}

fmmcl_status fmmcl_fmm3d_far_up(fmmcl_plan plan, const double *charges, const double *dipoles, cl_mem M,
                                cl_mem L) {
  return on_expansions(plan, M, L, FMMCL_PHASE_P2M | FMMCL_PHASE_M2M | FMMCL_PHASE_P2L, charges, dipoles);
}

fmmcl_status fmmcl_fmm3d_far_m2l(fmmcl_plan plan, cl_mem M, cl_mem L) {
  return on_expansions(plan, M, L, FMMCL_PHASE_M2L, NULL, NULL);
}

fmmcl_status fmmcl_fmm3d_far_down(fmmcl_plan plan, cl_mem M, cl_mem L, double *potential, double *gradient) {
  fmm3d_state *s = fmmcl_fmm3d_state_of(plan);
  if (!s) return fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "a far field needs a 3D Laplace FMM plan");
  /* the results of the previous density are still there */
  const cl_uchar zero = 0;
  FMMCL_CL_TRY(plan->ctx, clEnqueueFillBuffer(plan->ctx->queue, s->out, &zero, 1, 0,
                                              4 * s->tree->n_targets * s->real_size, 0, NULL, NULL));
  fmmcl_status st = on_expansions(plan, M, L, FMMCL_PHASE_L2L | FMMCL_PHASE_L2P | FMMCL_PHASE_M2P, NULL, NULL);
  return st ? st : fmmcl_fmm3d_download(plan, s, potential, gradient);
}
