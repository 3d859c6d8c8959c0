/* stokes3d_far.c — the Stokes FMM's far field: the expansions of its four
 * Laplace densities on the internal Laplace plan's cells, the P2M and M2L
 * that treat the four together (cl/stokes3d/stokes_far.cl: each source's
 * harmonics computed once, each shift's staged once and read once for
 * all four), the Laplace plan's other phases once per density, and the
 * four far fields left on the device for the combination. */
#include <stdio.h>
#include <string.h>

#include "core/launch.h"
#include "methods/laplace3d/fmm3d.h"
#include "methods/stokes3d/stokes3d.h"
#include "plan/registry.h"
#include "tuning/tuning.h"

#define FAR_FILE "stokes3d/stokes_far.cl"

static fmmcl_status zero(fmmcl_context ctx, cl_mem buf, size_t bytes) {
  const cl_uchar z = 0;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, buf, &z, 1, 0, bytes, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

/* Staged per V entry: a shift's harmonics and four multipoles. Both signs
 * of m (the contraction without selects) wherever they fit in a group's
 * local memory, else m >= 0 only; 0 when even that does not fit. Four
 * multipoles beside the harmonics pass half the local memory sooner than
 * expansions3d.cl's one, and keeping the selects out is worth more than a
 * second group per compute unit (benchmarks/README.md). */
static size_t entry_bytes(int order, size_t real_size, unsigned long long local, int *m2l_signed) {
  const size_t p = (size_t)order, ncoef = (p + 1) * (p + 2) / 2;
  const size_t ncoef2 = (2 * p + 1) * (2 * p + 2) / 2, nshift = (2 * p + 1) * (2 * p + 1);
  const size_t signed_bytes = (nshift + 4 * ncoef) * 2 * real_size;
  const size_t unsigned_bytes = (ncoef2 + 4 * ncoef) * 2 * real_size;
  *m2l_signed = signed_bytes <= local;
  return *m2l_signed ? signed_bytes : unsigned_bytes <= local ? unsigned_bytes : 0;
}

fmmcl_status fmmcl_stokes3d_far_create(fmmcl_plan plan, fmmcl_plan laplace, stokes_far *fr) {
  fmmcl_context ctx = plan->ctx;
  const fmm3d_state *s = fmmcl_fmm3d_state_of(laplace);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "the Stokes far field needs a Laplace FMM plan");
  const size_t bytes = s->tree->n_cells * s->ncoef * 2 * s->real_size;
  fmmcl_status st = FMMCL_SUCCESS;
  for (int d = 0; d < 4 && !st; d++) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, bytes, NULL, &fr->M[d]);
  for (int d = 0; d < 4 && !st; d++) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, bytes, NULL, &fr->L[d]);
  for (int d = 0; d < 4 && !st; d++)
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * s->tree->n_targets * s->real_size, NULL, &fr->out[d]);
  if (st) return st;
  int m2l_signed;
  const unsigned long long local = ctx->dev.info.local_mem_bytes;
  const size_t entry = entry_bytes(s->order, s->real_size, local, &m2l_signed);
  fr->joint_m2l = entry > 0; /* else one M2L per density, the Laplace plan's */
  const size_t batch = entry ? fmmcl_fmm3d_m2l_default_batch(local, entry) : 1;
  /* the Laplace plan's group size: one coefficient per work-item */
  fr->wgs = s->exp_wgs;
  char opt[256];
  /* NO_M2L: expansions3d.cl's own M2L kernels are the Laplace plan's */
  snprintf(opt, sizeof opt, "%s -DP=%d -DWGS=%zu -DDIPOLES=%d -DSTOKES_M2L=%d -DM2L_BATCH=%zu -DNO_M2L=1%s",
           s->real_size == 8 ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", s->order, fr->wgs, s->dipoles ? 1 : 0,
           fr->joint_m2l, batch, m2l_signed ? " -DM2L_SIGNED=1" : "");
  st = fmmcl_program_build(ctx, FAR_FILE, opt, &fr->program, NULL);
  if (!st) st = fmmcl_create_kernel(ctx, fr->program, FAR_FILE, "stokes_p2m", &fr->k_p2m);
  if (!st && fr->joint_m2l) st = fmmcl_create_kernel(ctx, fr->program, FAR_FILE, "stokes_m2l", &fr->k_m2l);
  return st;
}

static fmmcl_status run_p2m(fmmcl_plan plan, const fmm3d_state *s, const stokes_near *nr, stokes_far *fr,
                            fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_status st = FMMCL_KERNEL_ARGS(
      ctx, fr->k_p2m, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_MEM(s->leaf_src_begin), FMMCL_ARG_MEM(s->leaves),
      FMMCL_ARG_MEM(s->center), FMMCL_ARG_MEM(nr->y), FMMCL_ARG_MEM(nr->f),
      FMMCL_ARG_MEM(nr->ss ? nr->ss : nr->f), FMMCL_ARG_MEM(nr->sn ? nr->sn : nr->f), FMMCL_ARG_MEM(fr->M[0]),
      FMMCL_ARG_MEM(fr->M[1]), FMMCL_ARG_MEM(fr->M[2]), FMMCL_ARG_MEM(fr->M[3]));
  if (st || !s->tree->n_leaves) return st;
  return fmmcl_launch(ctx, fr->k_p2m, s->tree->n_leaves * fr->wgs, fr->wgs, log, "p2m");
}

static fmmcl_status run_m2l(fmmcl_plan plan, const fmm3d_state *s, stokes_far *fr, fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  const fmm3d_device_list *l = &s->m2l;
  fmmcl_status st = FMMCL_KERNEL_ARGS(
      ctx, fr->k_m2l, 0, FMMCL_ARG_MEM(l->rows), FMMCL_ARG_MEM(l->begin), FMMCL_ARG_MEM(l->entries),
      FMMCL_ARG_MEM(s->m2l_shift), FMMCL_ARG_MEM(s->m2l_table), FMMCL_ARG_MEM(fr->M[0]),
      FMMCL_ARG_MEM(fr->M[1]), FMMCL_ARG_MEM(fr->M[2]), FMMCL_ARG_MEM(fr->M[3]), FMMCL_ARG_MEM(fr->L[0]),
      FMMCL_ARG_MEM(fr->L[1]), FMMCL_ARG_MEM(fr->L[2]), FMMCL_ARG_MEM(fr->L[3]));
  if (st || !l->n_rows) return st;
  return fmmcl_launch(ctx, fr->k_m2l, l->n_rows * fr->wgs, fr->wgs, log, "m2l");
}

fmmcl_status fmmcl_stokes3d_far_run(fmmcl_plan plan, fmmcl_plan laplace, stokes_near *nr, stokes_far *fr) {
  fmmcl_context ctx = plan->ctx;
  const fmm3d_state *s = fmmcl_fmm3d_state_of(laplace);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "the Stokes far field needs a Laplace FMM plan");
  const size_t bytes = s->tree->n_cells * s->ncoef * 2 * s->real_size;
  fmmcl_plan_restart_phases(laplace);
  fmmcl_status st = FMMCL_SUCCESS;
  for (int k = 0; k < 4 && !st; k++) st = zero(ctx, fr->M[k], bytes);
  for (int k = 0; k < 4 && !st; k++) st = zero(ctx, fr->L[k], bytes);
  for (int k = 0; k < 4 && !st; k++) st = zero(ctx, fr->out[k], 4 * s->tree->n_targets * s->real_size);
  fmmcl_event_log log = {0};
  if (!st) st = run_p2m(plan, s, nr, fr, &log);
  /* each density's M2M, and its P2L (X list) from its charges and
   * dipoles put into the Laplace plan's sources */
  for (int k = 0; k < 4 && !st; k++) {
    if (s->p2l.n_rows) st = fmmcl_stokes3d_densities(plan, laplace, nr, k);
    if (!st)
      st = fmmcl_fmm3d_far_phases(laplace, FMMCL_PHASE_M2M | FMMCL_PHASE_P2L, fr->M[k], fr->L[k], NULL);
  }
  if (!st && fr->joint_m2l) st = run_m2l(plan, s, fr, &log);
  for (int k = 0; k < 4 && !st && !fr->joint_m2l; k++)
    st = fmmcl_fmm3d_far_phases(laplace, FMMCL_PHASE_M2L, fr->M[k], fr->L[k], NULL);
  for (int k = 0; k < 4 && !st; k++)
    st = fmmcl_fmm3d_far_phases(laplace, FMMCL_PHASE_L2L | FMMCL_PHASE_L2P | FMMCL_PHASE_M2P, fr->M[k],
                                fr->L[k], fr->out[k]);
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  if (st || fl) return st ? st : fl;
  /* the Laplace phases of all four, as this plan's (names are static) */
  for (size_t i = 0; i < laplace->n_phases; i++)
    if (strcmp(laplace->phases[i].name, "build") != 0 && strcmp(laplace->phases[i].name, "update") != 0)
      fmmcl_plan_record(plan, laplace->phases[i].name, laplace->phases[i].seconds);
  return FMMCL_SUCCESS;
}

void fmmcl_stokes3d_far_release(stokes_far *fr) {
  for (int d = 0; d < 4; d++) fmmcl_release(&fr->M[d]), fmmcl_release(&fr->L[d]), fmmcl_release(&fr->out[d]);
  fmmcl_release(&fr->k_p2m), fmmcl_release(&fr->k_m2l);
  fmmcl_release(&fr->program);
}
