/* stokes3d_far.c — the Stokes FMM's far field: the expansions of its four
 * Laplace densities on the internal Laplace plan's cells, and the M2L
 * that translates the four together (cl/stokes3d/stokes_m2l.cl), each
 * shift's harmonics staged once and read once for all four. */
#include <stdio.h>

#include "core/launch.h"
#include "methods/laplace3d/fmm3d.h"
#include "methods/stokes3d/stokes3d.h"
#include "tuning/tuning.h"

#define FAR_FILE "stokes3d/stokes_m2l.cl"

static fmmcl_status device_buffer(fmmcl_context ctx, size_t bytes, cl_mem *buf) {
  cl_int err;
  *buf = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, bytes ? bytes : 16, NULL, &err);
  if (err != CL_SUCCESS)
    return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "cannot allocate %zu bytes on %s: %s", bytes,
                      ctx->dev.info.device_name, fmmcl_cl_error_name(err));
  return FMMCL_SUCCESS;
}

/* Staged per V entry: a shift's harmonics and four multipoles. Both signs
 * of m when that leaves half the local memory free (expansions3d.cl's
 * rule), else m >= 0 only; 0 when even that does not fit. */
static size_t entry_bytes(int order, size_t real_size, unsigned long long local, int *m2l_signed) {
  const size_t p = (size_t)order, ncoef = (p + 1) * (p + 2) / 2;
  const size_t ncoef2 = (2 * p + 1) * (2 * p + 2) / 2, nshift = (2 * p + 1) * (2 * p + 1);
  const size_t signed_bytes = (nshift + 4 * ncoef) * 2 * real_size;
  const size_t unsigned_bytes = (ncoef2 + 4 * ncoef) * 2 * real_size;
  *m2l_signed = signed_bytes <= local / 2;
  return *m2l_signed ? signed_bytes : unsigned_bytes <= local ? unsigned_bytes : 0;
}

fmmcl_status fmmcl_stokes3d_far_create(fmmcl_plan plan, fmmcl_plan laplace, stokes_far *fr) {
  fmmcl_context ctx = plan->ctx;
  const fmm3d_state *s = fmmcl_fmm3d_state_of(laplace);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "the Stokes far field needs a Laplace FMM plan");
  const size_t bytes = s->tree->n_cells * s->ncoef * 2 * s->real_size;
  fmmcl_status st = FMMCL_SUCCESS;
  for (int d = 0; d < 4 && !st; d++) st = device_buffer(ctx, bytes, &fr->M[d]);
  for (int d = 0; d < 4 && !st; d++) st = device_buffer(ctx, bytes, &fr->L[d]);
  for (int d = 0; d < 4 && !st; d++) st = device_buffer(ctx, 4 * s->tree->n_targets * s->real_size, &fr->out[d]);
  if (st) return st;
  int m2l_signed;
  const unsigned long long local = ctx->dev.info.local_mem_bytes;
  const size_t entry = entry_bytes(s->order, s->real_size, local, &m2l_signed);
  if (!entry) return FMMCL_SUCCESS; /* one M2L per density */
  const size_t batch = fmmcl_fmm3d_m2l_default_batch(local, entry);
  /* the Laplace plan's group size: one coefficient per work-item */
  fr->wgs = s->exp_wgs;
  char opt[256];
  snprintf(opt, sizeof opt, "%s -DP=%d -DWGS=%zu -DM2L_BATCH=%zu%s",
           s->real_size == 8 ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", s->order, fr->wgs, batch,
           m2l_signed ? " -DM2L_SIGNED=1" : "");
  st = fmmcl_program_build(ctx, FAR_FILE, opt, &fr->program, NULL);
  return st ? st : fmmcl_create_kernel(ctx, fr->program, FAR_FILE, "stokes_m2l", &fr->k_m2l);
}

fmmcl_status fmmcl_stokes3d_far_m2l(fmmcl_plan plan, fmmcl_plan laplace, stokes_far *fr) {
  fmmcl_context ctx = plan->ctx;
  if (!fr->k_m2l) {
    fmmcl_status st = FMMCL_SUCCESS;
    for (int d = 0; d < 4 && !st; d++) st = fmmcl_fmm3d_far_m2l(laplace, fr->M[d], fr->L[d]);
    return st;
  }
  const fmm3d_state *s = fmmcl_fmm3d_state_of(laplace);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "the Stokes far field needs a Laplace FMM plan");
  const fmm3d_device_list *l = &s->m2l;
  fmmcl_status st = FMMCL_KERNEL_ARGS(
      ctx, fr->k_m2l, 0, FMMCL_ARG_MEM(l->rows), FMMCL_ARG_MEM(l->begin), FMMCL_ARG_MEM(l->entries),
      FMMCL_ARG_MEM(s->m2l_shift), FMMCL_ARG_MEM(s->m2l_table), FMMCL_ARG_MEM(fr->M[0]), FMMCL_ARG_MEM(fr->M[1]),
      FMMCL_ARG_MEM(fr->M[2]), FMMCL_ARG_MEM(fr->M[3]), FMMCL_ARG_MEM(fr->L[0]), FMMCL_ARG_MEM(fr->L[1]),
      FMMCL_ARG_MEM(fr->L[2]), FMMCL_ARG_MEM(fr->L[3]));
  if (st || !l->n_rows) return st;
  fmmcl_event_log log = {0};
  st = fmmcl_launch(ctx, fr->k_m2l, l->n_rows * fr->wgs, fr->wgs, &log, "m2l");
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  return st ? st : fl;
}

void fmmcl_stokes3d_far_release(stokes_far *fr) {
  for (int d = 0; d < 4; d++) fmmcl_release(&fr->M[d]), fmmcl_release(&fr->L[d]), fmmcl_release(&fr->out[d]);
  fmmcl_release(&fr->k_m2l);
  fmmcl_release(&fr->program);
}
