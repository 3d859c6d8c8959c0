/* fmm3d_far.c — a 3D Laplace FMM plan's phases on expansion and result
 * buffers its caller owns, for a method that runs the far field of
 * several densities on one plan and sums the near field itself (the
 * Stokes FMM: its own kernels put the densities into the plan's sorted
 * sources, run the operators that share work across densities, sum the
 * U list's pairs and combine the results on the device). */
#include "methods/laplace3d/fmm3d.h"
#include "plan/registry.h"

fmm3d_state *fmmcl_fmm3d_state_of(fmmcl_plan plan) {
  if (!plan || !(fmmcl_plan_runs(plan, "fmm3d") || fmmcl_plan_runs(plan, "fmm3d_ext"))) return NULL;
  return plan->impl;
}

fmmcl_status fmmcl_fmm3d_far_phases(fmmcl_plan plan, unsigned mask, cl_mem M, cl_mem L, cl_mem out) {
  fmm3d_state *s = fmmcl_fmm3d_state_of(plan);
  if (!s) return fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "a far field needs a 3D Laplace FMM plan");
  /* kernels take their buffers at each launch, so the swap lasts exactly
   * as long as this call */
  cl_mem own_M = s->M, own_L = s->L, own_out = s->out;
  s->M = M, s->L = L, s->out = out ? out : own_out;
  fmmcl_status st = fmmcl_fmm3d_run_phases(plan, s, mask & ~(unsigned)FMMCL_PHASE_P2P);
  s->M = own_M, s->L = own_L, s->out = own_out;
  return st;
}
