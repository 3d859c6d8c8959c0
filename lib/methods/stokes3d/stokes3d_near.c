/* stokes3d_near.c — the Stokes FMM's work on the points (kernels in
 * cl/stokes3d/stokes_p2p.cl): the near field, Stokeslets and stresslets
 * summed exactly with the direct sum's pair over the U list of the
 * internal Laplace FMM plan (its sorted points, frames and lists on the
 * device), the four Laplace densities put into that plan's sources, and
 * the far fields combined with the near field before one download. */
#include <stdio.h>
#include <stdlib.h>

#include "core/launch.h"
#include "methods/laplace3d/fmm3d.h"
#include "methods/stokes3d/stokes3d.h"

#define NEAR_FILE "stokes3d/stokes_p2p.cl"

/* The permutations run one work-item per element, in groups of up to 256. */
static size_t elementwise_local(fmmcl_context ctx) {
  return ctx->dev.info.max_work_group_size < 256 ? ctx->dev.info.max_work_group_size : 256;
}

static fmmcl_status put_vectors(fmmcl_plan plan, const fmm3d_state *s, stokes_near *nr, const double *v,
                                double scale, int target, cl_mem dst);

fmmcl_status fmmcl_stokes3d_near_create(fmmcl_plan plan, fmmcl_plan laplace, stokes_near *nr,
                                        const double *sources, const double *targets) {
  fmmcl_context ctx = plan->ctx;
  const fmm3d_state *s = fmmcl_fmm3d_state_of(laplace);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "the Stokes near field needs a Laplace FMM plan");
  const size_t ns = s->tree->n_sources, nt = s->tree->n_targets, rs = s->real_size;
  /* a target leaf's passes take WGS targets; 128 leaves a leaf of the
   * default size two or three */
  nr->wgs = ctx->dev.info.max_work_group_size < 128 ? ctx->dev.info.max_work_group_size : 128;
  char opt[256];
  snprintf(opt, sizeof opt, "%s -DWGS=%zu -DSTRESSLETS=%d -DPRESSURE=%d -DCOMPENSATE=%d",
           rs == 8 ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", nr->wgs, plan->opt.stresslets ? 1 : 0,
           plan->opt.pressure ? 1 : 0, s->compensate && s->src_lo && s->tgt_lo ? 1 : 0);
  fmmcl_status st = fmmcl_program_build(ctx, NEAR_FILE, opt, &nr->program, NULL);
  static const char *const names[] = {"stokes_p2p", "stokes_put_vectors", "stokes_unsort", "stokes_densities",
                                      "stokes_combine"};
  cl_kernel *const kernels[] = {&nr->k_p2p, &nr->k_put, &nr->k_unsort, &nr->k_densities, &nr->k_combine};
  if (!st) st = fmmcl_create_kernels(ctx, nr->program, NEAR_FILE, 5, names, kernels);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * ns * rs, NULL, &nr->f);
  if (!st && plan->opt.stresslets) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * ns * rs, NULL, &nr->ss);
  if (!st && plan->opt.stresslets) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * ns * rs, NULL, &nr->sn);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * ns * rs, NULL, &nr->y);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * nt * rs, NULL, &nr->xs);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 3 * (ns > nt ? ns : nt) * rs, NULL, &nr->user);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * nt * rs, NULL, &nr->out);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * nt * rs, NULL, &nr->out_user);
  const size_t stage = (3 * ns > 4 * nt ? 3 * ns : 4 * nt) * rs;
  if (!st) st = fmmcl_pinned_alloc(ctx, stage ? stage : 16, 0, &nr->stage);
  /* y for the densities' y . f, y . s, y . n; x / U for the combination */
  if (!st) st = put_vectors(plan, s, nr, sources, 1.0, 0, nr->y);
  if (!st) st = put_vectors(plan, s, nr, targets ? targets : sources, 1.0 / s->unit, 1, nr->xs);
  return st;
}

/* One vector per source (target: per target; caller's order, NULL:
 * zeros) into dst, sorted, times scale. */
static fmmcl_status put_vectors(fmmcl_plan plan, const fmm3d_state *s, stokes_near *nr, const double *v,
                                double scale, int target, cl_mem dst) {
  fmmcl_context ctx = plan->ctx;
  const size_t n = target ? s->tree->n_targets : s->tree->n_sources;
  if (!v) {
    const cl_uchar zero = 0;
    FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, dst, &zero, 1, 0, 4 * n * s->real_size, 0, NULL, NULL));
    return FMMCL_SUCCESS;
  }
  const fmmcl_permutation put = {.k = nr->k_put,
                                 .local = elementwise_local(ctx),
                                 .in = nr->user,
                                 .perm = target ? s->tgt_perm : s->src_perm,
                                 .out = dst};
  fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, nr->k_put, 4, FMMCL_ARG_REAL(scale, s->real_size));
  if (!st) st = fmmcl_upload_permuted(plan, s->real_size, v, 3 * n, nr->stage.ptr, &put);
  /* the stage is refilled by the next vector */
  if (!st) FMMCL_CL_TRY(ctx, clFinish(ctx->queue));
  return st;
}

fmmcl_status fmmcl_stokes3d_near_run(fmmcl_plan plan, fmmcl_plan laplace, stokes_near *nr, const double *f,
                                     const double *ss, const double *sn) {
  fmmcl_context ctx = plan->ctx;
  const fmm3d_state *s = fmmcl_fmm3d_state_of(laplace);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "the Stokes near field needs a Laplace FMM plan");
  const size_t nt = s->tree->n_targets;
  double t0 = fmmcl_wall_seconds();
  fmmcl_status st = put_vectors(plan, s, nr, f, 1.0, 0, nr->f);
  /* a stresslet's strength times its orientation is a length times a
   * force: the strength takes the frame's unit, as a dipole does */
  if (!st && nr->ss) st = put_vectors(plan, s, nr, ss, 1.0 / s->unit, 0, nr->ss);
  if (!st && nr->sn) st = put_vectors(plan, s, nr, sn, 1.0, 0, nr->sn);
  if (st) return st;
  fmmcl_plan_record(plan, "upload", fmmcl_wall_seconds() - t0);
  /* targets in no row (separate targets far from every source) keep 0 */
  const cl_uchar zero = 0;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, nr->out, &zero, 1, 0, 4 * nt * s->real_size, 0, NULL, NULL));
  fmmcl_event_log log = {0};
  const fmm3d_device_list *l = &s->p2p;
  st = FMMCL_KERNEL_ARGS(ctx, nr->k_p2p, 0, FMMCL_ARG_MEM(l->rows), FMMCL_ARG_MEM(l->begin),
                         FMMCL_ARG_MEM(l->entries), FMMCL_ARG_MEM(s->cell_tgt), FMMCL_ARG_MEM(s->center),
                         FMMCL_ARG_MEM(s->cell_src), FMMCL_ARG_MEM(s->src), FMMCL_ARG_MEM(s->tgt),
                         FMMCL_ARG_MEM(s->src_lo ? s->src_lo : s->src), FMMCL_ARG_MEM(s->tgt_lo ? s->tgt_lo : s->tgt),
                         FMMCL_ARG_MEM(nr->f), FMMCL_ARG_MEM(nr->ss ? nr->ss : nr->f),
                         FMMCL_ARG_MEM(nr->sn ? nr->sn : nr->f), FMMCL_ARG_MEM(nr->out));
  if (!st && l->n_rows) st = fmmcl_launch(ctx, nr->k_p2p, l->n_rows * nr->wgs, nr->wgs, &log, "near");
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  return st ? st : fl;
}

fmmcl_status fmmcl_stokes3d_densities(fmmcl_plan plan, fmmcl_plan laplace, stokes_near *nr, int k) {
  fmmcl_context ctx = plan->ctx;
  const fmm3d_state *s = fmmcl_fmm3d_state_of(laplace);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "the Stokes far field needs a Laplace FMM plan");
  const size_t ns = s->tree->n_sources, local = elementwise_local(ctx);
  fmmcl_event_log log = {0};
  fmmcl_status st = FMMCL_KERNEL_ARGS(
      ctx, nr->k_densities, 0, FMMCL_ARG_UINT(ns), FMMCL_ARG_INT(k), FMMCL_ARG_MEM(nr->y), FMMCL_ARG_MEM(nr->f),
      FMMCL_ARG_MEM(nr->ss ? nr->ss : nr->f), FMMCL_ARG_MEM(nr->sn ? nr->sn : nr->f), FMMCL_ARG_MEM(s->src),
      FMMCL_ARG_MEM(s->dip ? s->dip : s->src));
  if (!st && ns) st = fmmcl_launch(ctx, nr->k_densities, fmmcl_round_up(ns, local), local, &log, "densities");
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  return st ? st : fl;
}

fmmcl_status fmmcl_stokes3d_results(fmmcl_plan plan, fmmcl_plan laplace, stokes_near *nr, cl_mem const *far,
                                    double *u, double *p) {
  fmmcl_context ctx = plan->ctx;
  const fmm3d_state *s = fmmcl_fmm3d_state_of(laplace);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "the Stokes far field needs a Laplace FMM plan");
  const size_t nt = s->tree->n_targets, local = elementwise_local(ctx);
  const double inv = 1.0 / s->unit;
  fmmcl_event_log log = {0};
  fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, nr->k_combine, 0, FMMCL_ARG_UINT(nt), FMMCL_ARG_MEM(nr->xs),
                                      FMMCL_ARG_MEM(far[0]), FMMCL_ARG_MEM(far[1]), FMMCL_ARG_MEM(far[2]),
                                      FMMCL_ARG_MEM(far[3]), FMMCL_ARG_REAL(inv, s->real_size),
                                      FMMCL_ARG_MEM(nr->out));
  if (!st && nt) st = fmmcl_launch(ctx, nr->k_combine, fmmcl_round_up(nt, local), local, &log, "combine");
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  if (st || fl) return st ? st : fl;
  /* back from the frame's units: velocity as 1/r, pressure as 1/r^2 */
  st = FMMCL_KERNEL_ARGS(ctx, nr->k_unsort, 4, FMMCL_ARG_REAL(inv, s->real_size),
                         FMMCL_ARG_REAL(inv * inv, s->real_size));
  const fmmcl_real4_results r = {.unsort = {.k = nr->k_unsort,
                                            .local = local,
                                            .in = nr->out,
                                            .perm = s->tgt_perm,
                                            .out = nr->out_user},
                                 .stage = nr->stage.ptr,
                                 .pot = 3,
                                 .grad = 0,
                                 .dim = 3};
  return st ? st : fmmcl_download_real4(plan, &r, nt, s->real_size, p, u);
}

void fmmcl_stokes3d_near_release(stokes_near *nr) {
  fmmcl_release(&nr->k_p2p), fmmcl_release(&nr->k_put), fmmcl_release(&nr->k_unsort);
  fmmcl_release(&nr->k_densities), fmmcl_release(&nr->k_combine);
  fmmcl_release(&nr->f), fmmcl_release(&nr->ss), fmmcl_release(&nr->sn), fmmcl_release(&nr->user);
  fmmcl_release(&nr->y), fmmcl_release(&nr->xs);
  fmmcl_release(&nr->out), fmmcl_release(&nr->out_user);
  fmmcl_release(&nr->program);
  if (nr->stage.ptr) fmmcl_pinned_free(&nr->stage);
}
