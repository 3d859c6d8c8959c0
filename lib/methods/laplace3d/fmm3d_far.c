/* fmm3d_far.c — the far field alone of a 3D Laplace FMM plan (every phase
 * but the P2P), in three steps on expansion and result buffers the caller
 * owns and on charges (and dipoles) the caller's kernels put into the
 * plan's sorted source buffers, so that several densities share one plan
 * and a translation of all of them at once can replace the M2L step (the
 * Stokes FMM, which sums the near field with its own kernel over the
 * plan's U list and combines the results on the device). */
#include <stdlib.h>

#include "methods/laplace3d/fmm3d.h"
#include "plan/registry.h"

fmm3d_state *fmmcl_fmm3d_state_of(fmmcl_plan plan) {
  if (!plan || !(fmmcl_plan_runs(plan, "fmm3d") || fmmcl_plan_runs(plan, "fmm3d_ext"))) return NULL;
  return plan->impl;
}

static fmmcl_status zero(fmmcl_context ctx, cl_mem buf, size_t bytes) {
  const cl_uchar z = 0;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, buf, &z, 1, 0, bytes, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

/* Runs the phases in mask with M, L and out in place of the plan's own:
 * kernels take their buffers at each launch, so the swap lasts exactly as
 * long as this call. */
static fmmcl_status on_buffers(fmmcl_plan plan, cl_mem M, cl_mem L, cl_mem out, unsigned mask) {
  fmm3d_state *s = fmmcl_fmm3d_state_of(plan);
  if (!s) return fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "a far field needs a 3D Laplace FMM plan");
  cl_mem own_M = s->M, own_L = s->L, own_out = s->out;
  s->M = M, s->L = L, s->out = out ? out : own_out;
  fmmcl_status st = fmmcl_fmm3d_run_phases(plan, s, mask);
  s->M = own_M, s->L = own_L, s->out = own_out;
  return st;
}

fmmcl_status fmmcl_fmm3d_far_up(fmmcl_plan plan, cl_mem M, cl_mem L) {
  fmm3d_state *s = fmmcl_fmm3d_state_of(plan);
  if (!s) return fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "a far field needs a 3D Laplace FMM plan");
  const size_t bytes = s->tree->n_cells * s->ncoef * 2 * s->real_size;
  fmmcl_status st = zero(plan->ctx, M, bytes);
  if (!st) st = zero(plan->ctx, L, bytes);
  return st ? st : on_buffers(plan, M, L, NULL, FMMCL_PHASE_P2M | FMMCL_PHASE_M2M | FMMCL_PHASE_P2L);
}

fmmcl_status fmmcl_fmm3d_far_m2l(fmmcl_plan plan, cl_mem M, cl_mem L) {
  return on_buffers(plan, M, L, NULL, FMMCL_PHASE_M2L);
}

fmmcl_status fmmcl_fmm3d_far_down(fmmcl_plan plan, cl_mem M, cl_mem L, cl_mem out) {
  fmm3d_state *s = fmmcl_fmm3d_state_of(plan);
  if (!s) return fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "a far field needs a 3D Laplace FMM plan");
  fmmcl_status st = zero(plan->ctx, out, 4 * s->tree->n_targets * s->real_size);
  return st ? st : on_buffers(plan, M, L, out, FMMCL_PHASE_L2L | FMMCL_PHASE_L2P | FMMCL_PHASE_M2P);
}
