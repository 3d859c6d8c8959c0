/* fmm3d_phases.c — one execution of a 3D FMM or treecode plan on the
 * device: charges in (permuted into sorted order on the device), the
 * operator launches phase by phase, results out (unpermuted there too).
 * Launches are queued back to back and timed afterwards by their profiling
 * events. */
#include <stdlib.h>
#include <string.h>

#include "methods/laplace3d/fmm3d.h"

#define ARG(k, i, v) FMMCL_CL_TRY(ctx, clSetKernelArg((k), (i), sizeof(v), &(v)))

/* The launches of one run_phases call, in queue order: all are enqueued on
 * the in-order queue without waiting, and their profiling times are read
 * after a single clFinish, so the device never idles between kernels.
 * A phase with nothing to launch keeps a NULL event so that it is still
 * recorded, in order. */
#define LOG_CAPACITY 128
typedef struct launch_log {
  size_t n;
  cl_event ev[LOG_CAPACITY];
  const char *phase[LOG_CAPACITY];
} launch_log;

/* Waits for every logged launch, records its time under its phase and
 * releases its event; the log is empty afterwards, even on failure. */
static fmmcl_status flush_log(fmmcl_plan plan, launch_log *log) {
  cl_int err = log->n ? clFinish(plan->ctx->queue) : CL_SUCCESS;
  for (size_t i = 0; i < log->n; i++) {
    fmmcl_plan_record(plan, log->phase[i], log->ev[i] && !err ? fmmcl_event_seconds(log->ev[i]) : 0.0);
    if (log->ev[i]) clReleaseEvent(log->ev[i]);
  }
  log->n = 0;
  FMMCL_CL_TRY(plan->ctx, err);
  return FMMCL_SUCCESS;
}

/* Enqueues groups work-groups of wgs work-items, timed under phase; zero
 * groups launch nothing (OpenCL refuses an empty range). */
static fmmcl_status launch(fmmcl_plan plan, launch_log *log, cl_kernel k, size_t groups, size_t wgs,
                           const char *phase) {
  fmmcl_context ctx = plan->ctx;
  if (log->n == LOG_CAPACITY) {
    fmmcl_status st = flush_log(plan, log);
    if (st) return st;
  }
  cl_event ev = NULL;
  if (groups) {
    size_t global = groups * wgs, local = wgs;
    FMMCL_CL_TRY(ctx, clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &global, &local, 0, NULL, &ev));
  }
  log->ev[log->n] = ev;
  log->phase[log->n++] = phase;
  return FMMCL_SUCCESS;
}

static fmmcl_status zero_buffer(fmmcl_context ctx, cl_mem buf, size_t bytes) {
  const cl_uchar zero = 0;
  if (!buf) return FMMCL_SUCCESS;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, buf, &zero, 1, 0, bytes, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

/* One work-item per element, n of them, in groups of up to 256. */
static fmmcl_status launch_elementwise(fmmcl_context ctx, cl_kernel k, size_t n) {
  size_t local = ctx->dev.info.max_work_group_size < 256 ? ctx->dev.info.max_work_group_size : 256;
  size_t global = (n + local - 1) / local * local;
  if (n == 0) return FMMCL_SUCCESS;
  FMMCL_CL_TRY(ctx, clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &global, &local, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_fmm3d_upload_charges(fmmcl_plan plan, fmm3d_state *s, const double *charges) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_tree3d *t = s->tree;
  double t0 = fmmcl_wall_seconds();
  /* a streaming copy in the caller's order; the device does the gather */
  fmmcl_status up = fmmcl_upload_reals(ctx, s->real_size, charges, t->n_sources, s->q_pin.ptr, s->charges);
  if (up) return up;
  const cl_uint n = (cl_uint)t->n_sources;
  cl_kernel k = s->k_charges;
  ARG(k, 0, s->charges); ARG(k, 1, s->src_perm); ARG(k, 2, n); ARG(k, 3, s->src);
  fmmcl_status st = launch_elementwise(ctx, k, n);
  const size_t exp_bytes = t->n_cells * s->ncoef * 2 * s->real_size;
  if (!st) st = zero_buffer(ctx, s->M, exp_bytes);
  if (!st) st = zero_buffer(ctx, s->L, exp_bytes);
  if (!st) st = zero_buffer(ctx, s->out, 4 * t->n_targets * s->real_size);
  if (st) return st;
  FMMCL_CL_TRY(ctx, clFinish(ctx->queue));
  fmmcl_plan_record(plan, "upload", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}

static fmmcl_status run_p2m(fmmcl_plan plan, fmm3d_state *s, launch_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->k_p2m;
  ARG(k, 0, s->src); ARG(k, 1, s->leaf_src_begin); ARG(k, 2, s->leaves); ARG(k, 3, s->center); ARG(k, 4, s->M);
  return launch(plan, log, k, s->tree->n_leaves, s->exp_wgs, "p2m");
}

/* Per level, deepest parents first; the in-order queue orders the levels. */
static fmmcl_status run_levels(fmmcl_plan plan, fmm3d_state *s, launch_log *log, cl_kernel k,
                               const fmm3d_level_groups *lv, cl_uint first_arg, const char *phase) {
  fmmcl_context ctx = plan->ctx;
  for (size_t i = 0; i < lv->n_launches; i++) {
    cl_int first = (cl_int)lv->begin[i];
    ARG(k, first_arg, first);
    /* the argument is captured at enqueue, so the next level may reset it */
    fmmcl_status st = launch(plan, log, k, lv->begin[i + 1] - lv->begin[i], s->exp_wgs, phase);
    if (st) return st;
  }
  return lv->n_launches ? FMMCL_SUCCESS : launch(plan, log, k, 0, s->exp_wgs, phase);
}

static fmmcl_status run_m2m(fmmcl_plan plan, fmm3d_state *s, launch_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->k_m2m;
  ARG(k, 0, s->m2m_parents); ARG(k, 1, s->m2m_children); ARG(k, 2, s->center); ARG(k, 3, s->M);
  return run_levels(plan, s, log, k, &s->m2m_levels, 4, "m2m");
}

static fmmcl_status run_m2l(fmmcl_plan plan, fmm3d_state *s, launch_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->k_m2l;
  const fmm3d_device_list *v = &s->m2l;
  ARG(k, 0, v->rows); ARG(k, 1, v->begin); ARG(k, 2, v->entries); ARG(k, 3, s->m2l_shift);
  ARG(k, 4, s->m2l_table); ARG(k, 5, s->M); ARG(k, 6, s->L);
  return launch(plan, log, k, v->n_rows, s->exp_wgs, "m2l");
}

static fmmcl_status run_p2l(fmmcl_plan plan, fmm3d_state *s, launch_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->k_p2l;
  const fmm3d_device_list *x = &s->p2l;
  ARG(k, 0, x->rows); ARG(k, 1, x->begin); ARG(k, 2, x->entries); ARG(k, 3, s->cell_src);
  ARG(k, 4, s->src); ARG(k, 5, s->center); ARG(k, 6, s->L);
  return launch(plan, log, k, x->n_rows, s->exp_wgs, "p2l");
}

static fmmcl_status run_l2l(fmmcl_plan plan, fmm3d_state *s, launch_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->k_l2l;
  ARG(k, 0, s->l2l_pairs); ARG(k, 1, s->center); ARG(k, 2, s->L);
  return run_levels(plan, s, log, k, &s->l2l_levels, 3, "l2l");
}

static fmmcl_status run_l2p(fmmcl_plan plan, fmm3d_state *s, launch_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->k_l2p;
  ARG(k, 0, s->leaves); ARG(k, 1, s->leaf_tgt_begin); ARG(k, 2, s->tgt); ARG(k, 3, s->center);
  ARG(k, 4, s->L); ARG(k, 5, s->out);
  return launch(plan, log, k, s->tree->n_leaves, s->exp_wgs, "l2p");
}

static fmmcl_status run_m2p(fmmcl_plan plan, fmm3d_state *s, launch_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->k_m2p;
  const fmm3d_device_list *w = &s->m2p;
  ARG(k, 0, w->rows); ARG(k, 1, w->begin); ARG(k, 2, w->entries); ARG(k, 3, s->cell_tgt);
  ARG(k, 4, s->tgt); ARG(k, 5, s->center); ARG(k, 6, s->M); ARG(k, 7, s->out);
  return launch(plan, log, k, w->n_rows, s->exp_wgs, "m2p");
}

static fmmcl_status run_p2p(fmmcl_plan plan, fmm3d_state *s, launch_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->k_p2p;
  const fmm3d_device_list *u = &s->p2p;
  ARG(k, 0, u->rows); ARG(k, 1, u->begin); ARG(k, 2, u->entries); ARG(k, 3, s->cell_tgt);
  ARG(k, 4, s->src); ARG(k, 5, s->tgt); ARG(k, 6, s->out);
  return launch(plan, log, k, u->n_rows, s->p2p_wgs, "p2p");
}

fmmcl_status fmmcl_fmm3d_run_phases(fmmcl_plan plan, fmm3d_state *s, unsigned mask) {
  typedef fmmcl_status (*phase_fn)(fmmcl_plan, fmm3d_state *, launch_log *);
  static const struct { unsigned bit; phase_fn run; } phases[] = {
      {FMMCL_FMM3D_P2M, run_p2m}, {FMMCL_FMM3D_M2M, run_m2m}, {FMMCL_FMM3D_M2L, run_m2l},
      {FMMCL_FMM3D_P2L, run_p2l}, {FMMCL_FMM3D_L2L, run_l2l}, {FMMCL_FMM3D_L2P, run_l2p},
      {FMMCL_FMM3D_M2P, run_m2p}, {FMMCL_FMM3D_P2P, run_p2p}};
  /* the treecode has no local expansions: never run their phases */
  if (s->treecode) mask &= FMMCL_FMM3D_TREECODE_PHASES;
  launch_log log;
  log.n = 0;
  fmmcl_status st = FMMCL_SUCCESS;
  for (size_t i = 0; !st && i < sizeof phases / sizeof phases[0]; i++)
    if (mask & phases[i].bit) st = phases[i].run(plan, s, &log);
  /* flushed on failure too: the events must not leak */
  fmmcl_status fl = flush_log(plan, &log);
  return st ? st : fl;
}

fmmcl_status fmmcl_fmm3d_download(fmmcl_plan plan, fmm3d_state *s, double *potential, double *gradient) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_tree3d *t = s->tree;
  double t0 = fmmcl_wall_seconds();
  const cl_uint n = (cl_uint)t->n_targets;
  cl_kernel k = s->k_unsort;
  ARG(k, 0, s->out); ARG(k, 1, s->tgt_perm); ARG(k, 2, n); ARG(k, 3, s->out_user);
  fmmcl_status st = launch_elementwise(ctx, k, n);
  if (st) return st;
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, s->out_user, CL_TRUE, 0, 4 * t->n_targets * s->real_size,
                                        s->out_pin.ptr, 0, NULL, NULL));
  /* out_user[j] = (d/dx, d/dy, d/dz, phi) of the caller's target j */
  const void *out = s->out_pin.ptr;
  #pragma omp parallel for schedule(static) if (t->n_targets > 65536)
  for (size_t j = 0; j < t->n_targets; j++) {
    double v[4];
    for (int c = 0; c < 4; c++)
      v[c] = s->real_size == 4 ? (double)((const float *)out)[4 * j + c] : ((const double *)out)[4 * j + c];
    potential[j] = v[3];
    if (gradient)
      for (int c = 0; c < 3; c++) gradient[3 * j + c] = v[c];
  }
  fmmcl_plan_record(plan, "download", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}
