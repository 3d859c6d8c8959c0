/* fmm3d_phases.c — one execution of a 3D FMM or treecode plan on the
 * device: charges in (permuted into sorted order on the device), the
 * operator launches phase by phase, results out (unpermuted there too).
 * Launches are queued back to back and timed afterwards by their profiling
 * events (an event log, core/launch.h). */
#include <stdlib.h>
#include <string.h>

#include "methods/laplace3d/fmm3d.h"

/* Enqueues groups work-groups of wgs work-items, timed under phase; zero
 * groups launch nothing but the phase keeps its place in the log (a NULL
 * event), so that it is still recorded, in order. */
static fmmcl_status launch(fmmcl_plan plan, fmmcl_event_log *log, cl_kernel k, size_t groups, size_t wgs,
                           const char *phase) {
  if (groups) return fmmcl_launch(plan->ctx, k, groups * wgs, wgs, log, phase);
  if (!fmmcl_event_log_slot(log, phase))
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for the event log");
  return FMMCL_SUCCESS;
}

static fmmcl_status zero_buffer(fmmcl_context ctx, cl_mem buf, size_t bytes) {
  const cl_uchar zero = 0;
  if (!buf) return FMMCL_SUCCESS;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, buf, &zero, 1, 0, bytes, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

/* The permutations run one work-item per element, in groups of up to 256. */
static size_t elementwise_local(fmmcl_context ctx) {
  return ctx->dev.info.max_work_group_size < 256 ? ctx->dev.info.max_work_group_size : 256;
}

fmmcl_status fmmcl_fmm3d_upload_charges(fmmcl_plan plan, fmm3d_state *s, const double *charges) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_tree3d *t = s->tree;
  double t0 = fmmcl_wall_seconds();
  /* a streaming copy in the caller's order; the device does the gather */
  const fmmcl_permutation put = {.k = s->k_charges,
                                 .local = elementwise_local(ctx),
                                 .in = s->charges,
                                 .perm = s->src_perm,
                                 .out = s->src};
  fmmcl_status st = fmmcl_upload_permuted(plan, s->real_size, charges, t->n_sources, s->q_pin.ptr, &put);
  const size_t exp_bytes = t->n_cells * s->ncoef * 2 * s->real_size;
  if (!st) st = zero_buffer(ctx, s->M, exp_bytes);
  if (!st) st = zero_buffer(ctx, s->L, exp_bytes);
  if (!st) st = zero_buffer(ctx, s->out, 4 * t->n_targets * s->real_size);
  if (st) return st;
  /* host charges go through the pinned stage, which the next execute
   * overwrites; device charges (plan->io) need no wait here: the phases
   * follow in the same in-order queue */
  if (!plan->io) FMMCL_CL_TRY(ctx, clFinish(ctx->queue));
  fmmcl_plan_record(plan, "upload", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}

/* The treecode's multipoles are about its sources' centres (exp_frame):
 * its P2M is p2m_about, its M2M the FMM's between those centres. */
static fmmcl_status run_p2m(fmmcl_plan plan, fmm3d_state *s, fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->treecode ? s->k_p2m_about : s->k_p2m;
  fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_MEM(s->leaf_src_begin),
                                      FMMCL_ARG_MEM(s->leaves), FMMCL_ARG_MEM(s->center));
  if (!st && s->treecode) st = FMMCL_KERNEL_ARGS(ctx, k, 4, FMMCL_ARG_MEM(s->exp_frame));
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, k, s->treecode ? 5 : 4, FMMCL_ARG_MEM(s->M),
                           FMMCL_ARG_MEM(s->dip ? s->dip : s->src));
  return st ? st : launch(plan, log, k, s->tree->n_leaves, s->exp_wgs, "p2m");
}

/* Per level, deepest parents first; the in-order queue orders the levels. */
static fmmcl_status run_levels(fmmcl_plan plan, fmm3d_state *s, fmmcl_event_log *log, cl_kernel k,
                               const fmm3d_level_groups *lv, cl_uint first_arg, const char *phase) {
  fmmcl_context ctx = plan->ctx;
  for (size_t i = 0; i < lv->n_launches; i++) {
    /* the argument is captured at enqueue, so the next level may reset it */
    fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, k, first_arg, FMMCL_ARG_INT(lv->begin[i]));
    if (!st) st = launch(plan, log, k, lv->begin[i + 1] - lv->begin[i], s->exp_wgs, phase);
    if (st) return st;
  }
  return lv->n_launches ? FMMCL_SUCCESS : launch(plan, log, k, 0, s->exp_wgs, phase);
}

static fmmcl_status run_m2m(fmmcl_plan plan, fmm3d_state *s, fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->k_m2m;
  fmmcl_status st =
      FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(s->m2m_parents), FMMCL_ARG_MEM(s->m2m_children),
                        FMMCL_ARG_MEM(s->treecode ? s->exp_frame : s->center), FMMCL_ARG_MEM(s->M));
  return st ? st : run_levels(plan, s, log, k, &s->m2m_levels, 4, "m2m");
}

/* A phase over a list: the kernel takes the list (rows, begin, entries) as
 * its first arguments, then more, and runs a work-group per row. */
static fmmcl_status run_list(fmmcl_plan plan, fmmcl_event_log *log, cl_kernel k, const fmm3d_device_list *l,
                             size_t wgs, const char *phase, size_t n_more, const fmmcl_arg *more) {
  fmmcl_status st = FMMCL_KERNEL_ARGS(plan->ctx, k, 0, FMMCL_ARG_MEM(l->rows), FMMCL_ARG_MEM(l->begin),
                                      FMMCL_ARG_MEM(l->entries));
  if (!st) st = fmmcl_kernel_args(plan->ctx, k, 3, n_more, more);
  return st ? st : launch(plan, log, k, l->n_rows, wgs, phase);
}
#define RUN_LIST(plan, log, k, l, wgs, phase, ...)                                                          \
  run_list((plan), (log), (k), (l), (wgs), (phase), sizeof((fmmcl_arg[]){__VA_ARGS__}) / sizeof(fmmcl_arg), \
           (fmmcl_arg[]){__VA_ARGS__})

static fmmcl_status run_m2l(fmmcl_plan plan, fmm3d_state *s, fmmcl_event_log *log) {
  if (!s->m2l_batched)
    return RUN_LIST(plan, log, s->k_m2l, &s->m2l, s->exp_wgs, "m2l", FMMCL_ARG_MEM(s->m2l_shift),
                    FMMCL_ARG_MEM(s->m2l_table), FMMCL_ARG_MEM(s->M), FMMCL_ARG_MEM(s->L));
  fmmcl_status st =
      FMMCL_KERNEL_ARGS(plan->ctx, s->k_m2l, 0, FMMCL_ARG_MEM(s->m2l_targets), FMMCL_ARG_MEM(s->m2l_begin),
                        FMMCL_ARG_MEM(s->m2l_sources), FMMCL_ARG_MEM(s->m2l_dir), FMMCL_ARG_MEM(s->m2l_table),
                        FMMCL_ARG_MEM(s->M), FMMCL_ARG_MEM(s->L));
  return st ? st : launch(plan, log, s->k_m2l, s->m2l_groups, s->m2l_wgs, "m2l");
}

static fmmcl_status run_p2l(fmmcl_plan plan, fmm3d_state *s, fmmcl_event_log *log) {
  return RUN_LIST(plan, log, s->k_p2l, &s->p2l, s->exp_wgs, "p2l", FMMCL_ARG_MEM(s->cell_src),
                  FMMCL_ARG_MEM(s->src), FMMCL_ARG_MEM(s->center), FMMCL_ARG_MEM(s->L),
                  FMMCL_ARG_MEM(s->dip ? s->dip : s->src));
}

static fmmcl_status run_l2l(fmmcl_plan plan, fmm3d_state *s, fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->k_l2l;
  fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(s->l2l_pairs), FMMCL_ARG_MEM(s->center),
                                      FMMCL_ARG_MEM(s->L));
  return st ? st : run_levels(plan, s, log, k, &s->l2l_levels, 3, "l2l");
}

static fmmcl_status run_l2p(fmmcl_plan plan, fmm3d_state *s, fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  cl_kernel k = s->k_l2p;
  fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(s->leaves), FMMCL_ARG_MEM(s->leaf_tgt_begin),
                                      FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_MEM(s->center), FMMCL_ARG_MEM(s->L),
                                      FMMCL_ARG_MEM(s->out), FMMCL_ARG_MEM(s->hess ? s->hess : s->out));
  return st ? st : launch(plan, log, k, s->tree->n_leaves, s->exp_wgs, "l2p");
}

static fmmcl_status run_m2p(fmmcl_plan plan, fmm3d_state *s, fmmcl_event_log *log) {
  fmmcl_status st =
      FMMCL_KERNEL_ARGS(plan->ctx, s->k_m2p, 11, FMMCL_ARG_MEM(s->exp_center ? s->exp_center : s->center),
                        FMMCL_ARG_REAL(s->m2p_bound, s->real_size), FMMCL_ARG_INT(s->m2p_split));
  if (st) return st;
  /* m2p_split groups per row; the treecode's rows are its target groups */
  fmm3d_device_list split = s->m2p;
  split.n_rows *= s->m2p_split;
  const int groups = s->group_tgt != NULL;
  return RUN_LIST(plan, log, s->k_m2p, &split, s->m2p_wgs, "m2p",
                  FMMCL_ARG_MEM(groups ? s->group_tgt : s->cell_tgt), FMMCL_ARG_MEM(s->tgt),
                  FMMCL_ARG_MEM(groups ? s->group_frame : s->center),
                  FMMCL_ARG_MEM(groups ? s->group_sphere : s->center), FMMCL_ARG_MEM(s->center),
                  FMMCL_ARG_MEM(s->M), FMMCL_ARG_MEM(s->out), FMMCL_ARG_MEM(s->hess ? s->hess : s->out));
}

/* A work-group per chunk of a target leaf (fmm3d_p2p.cl), not per row. */
static fmmcl_status run_p2p(fmmcl_plan plan, fmm3d_state *s, fmmcl_event_log *log) {
  const fmm3d_device_list *l = &s->p2p;
  fmmcl_status st = FMMCL_KERNEL_ARGS(
      plan->ctx, s->k_p2p, 0, FMMCL_ARG_MEM(s->p2p_chunks), FMMCL_ARG_MEM(l->rows), FMMCL_ARG_MEM(l->begin),
      FMMCL_ARG_MEM(l->entries), FMMCL_ARG_MEM(s->cell_src), FMMCL_ARG_MEM(s->center), FMMCL_ARG_MEM(s->src),
      FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_MEM(s->out), FMMCL_ARG_MEM(s->src_lo ? s->src_lo : s->src),
      FMMCL_ARG_MEM(s->tgt_lo ? s->tgt_lo : s->tgt), FMMCL_ARG_MEM(s->dip ? s->dip : s->src),
      FMMCL_ARG_MEM(s->hess ? s->hess : s->out));
  return st ? st : launch(plan, log, s->k_p2p, s->n_p2p_chunks, s->p2p_wgs, "p2p");
}

fmmcl_status fmmcl_fmm3d_run_phases(fmmcl_plan plan, fmm3d_state *s, unsigned mask) {
  typedef fmmcl_status (*phase_fn)(fmmcl_plan, fmm3d_state *, fmmcl_event_log *);
  static const struct {
    unsigned bit;
    phase_fn run;
  } phases[] = {{FMMCL_PHASE_P2M, run_p2m}, {FMMCL_PHASE_M2M, run_m2m}, {FMMCL_PHASE_M2L, run_m2l},
                {FMMCL_PHASE_P2L, run_p2l}, {FMMCL_PHASE_L2L, run_l2l}, {FMMCL_PHASE_L2P, run_l2p},
                {FMMCL_PHASE_M2P, run_m2p}, {FMMCL_PHASE_P2P, run_p2p}};
  /* the treecode has no local expansions: never run their phases */
  if (s->treecode) mask &= FMMCL_FMM3D_TREECODE_PHASES;
  fmmcl_event_log log = {0};
  fmmcl_status st = FMMCL_SUCCESS;
  for (size_t i = 0; !st && i < sizeof phases / sizeof phases[0]; i++)
    if (mask & phases[i].bit) st = phases[i].run(plan, s, &log);
  /* flushed on failure too: the events must not leak */
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  return st ? st : fl;
}

fmmcl_status fmmcl_fmm3d_upload_dipoles(fmmcl_plan plan, fmm3d_state *s, const double *dipoles) {
  fmmcl_context ctx = plan->ctx;
  const size_t ns = s->tree->n_sources, nt = s->tree->n_targets;
  double t0 = fmmcl_wall_seconds();
  fmmcl_status st = FMMCL_SUCCESS;
  if (s->hessian) st = zero_buffer(ctx, s->hess, 6 * nt * s->real_size);
  if (!st && s->dipoles && !dipoles) st = zero_buffer(ctx, s->dip, 4 * ns * s->real_size);
  if (!st && s->dipoles && dipoles) {
    void *stage = malloc(3 * (ns ? ns : 1) * s->real_size);
    if (!stage) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
    /* dipoles are lengths times charges: the frame's unit scales them as
     * it scales coordinates */
    const fmmcl_permutation put = {.k = s->k_dipoles,
                                   .local = elementwise_local(ctx),
                                   .in = s->dip_user,
                                   .perm = s->src_perm,
                                   .out = s->dip};
    st = FMMCL_KERNEL_ARGS(ctx, s->k_dipoles, 4, FMMCL_ARG_REAL(1.0 / s->unit, s->real_size));
    if (!st) st = fmmcl_upload_reals(ctx, s->real_size, dipoles, 3 * ns, stage, s->dip_user);
    if (!st) st = fmmcl_permute(ctx, &put, ns);
    clFinish(ctx->queue); /* the stage must outlive the write */
    free(stage);
  }
  if (st) return st;
  FMMCL_CL_TRY(ctx, clFinish(ctx->queue));
  fmmcl_plan_record(plan, "upload_dipoles", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_fmm3d_download_hessian(fmmcl_plan plan, fmm3d_state *s, double *hessian) {
  fmmcl_context ctx = plan->ctx;
  const size_t n = s->tree->n_targets;
  double t0 = fmmcl_wall_seconds();
  const double inv = 1.0 / s->unit;
  const fmmcl_permutation back = {.k = s->k_unsort_hessian,
                                  .local = elementwise_local(ctx),
                                  .in = s->hess,
                                  .perm = s->tgt_perm,
                                  .out = s->hess_user};
  fmmcl_status st =
      FMMCL_KERNEL_ARGS(ctx, s->k_unsort_hessian, 4, FMMCL_ARG_REAL(inv * inv * inv, s->real_size));
  if (!st) st = fmmcl_permute(ctx, &back, n);
  if (st) return st;
  void *stage = malloc(6 * (n ? n : 1) * s->real_size);
  if (!stage) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  cl_int err =
      clEnqueueReadBuffer(ctx->queue, s->hess_user, CL_TRUE, 0, 6 * n * s->real_size, stage, 0, NULL, NULL);
  if (err == CL_SUCCESS)
    for (size_t i = 0; i < 6 * n; i++) hessian[i] = fmmcl_get_real(stage, s->real_size, i);
  free(stage);
  if (err != CL_SUCCESS)
    return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "reading the Hessian back: %s",
                      fmmcl_cl_error_name(err));
  fmmcl_plan_record(plan, "download_hessian", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_fmm3d_download(fmmcl_plan plan, fmm3d_state *s, double *potential, double *gradient) {
  /* back from the device frame's units (the unsort's arguments after the
   * permutation's four) */
  const double inv = 1.0 / s->unit;
  fmmcl_status st = FMMCL_KERNEL_ARGS(plan->ctx, s->k_unsort, 4, FMMCL_ARG_REAL(inv * inv, s->real_size),
                                      FMMCL_ARG_REAL(inv, s->real_size));
  if (st) return st;
  /* out_user[j] = (d/dx, d/dy, d/dz, phi) of the caller's target j */
  const fmmcl_real4_results r = {.unsort = {.k = s->k_unsort,
                                            .local = elementwise_local(plan->ctx),
                                            .in = s->out,
                                            .perm = s->tgt_perm,
                                            .out = s->out_user},
                                 .stage = s->out_pin.ptr,
                                 .pot = 3,
                                 .grad = 0,
                                 .dim = 3};
  return fmmcl_download_real4(plan, &r, s->tree->n_targets, s->real_size, potential, gradient);
}
