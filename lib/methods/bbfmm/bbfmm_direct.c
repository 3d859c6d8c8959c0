/* bbfmm_direct.c — FMMCL_DIRECT for the black-box FMM's kernels (opt.bbfmm_kernel
 * set): every target against every source with cl/bbfmm.cl's P2P kernel, the
 * kernel function (a user expression too) compiled in exactly as in the bbFMM,
 * so a bbFMM plan can be checked against the direct sum of the same kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"
#include "plan/registry.h"

/* The P2P kernel's lists for all pairs: one source "leaf" holding every
 * source; targets cut into chunks of one work-group, each chunk a cluster
 * whose only neighbour is that leaf. */
static fmmcl_status lists(fmmcl_plan plan, fmmcl_bbfmm_state *s) {
  fmmcl_context ctx = plan->ctx;
  size_t nc = (plan->n_targets + s->p2p_wgs - 1) / s->p2p_wgs;
  s->n_clusters = nc;
  uint32_t *cl = malloc(nc * sizeof *cl), *ns = malloc((nc + 1) * sizeof *ns), *ni = calloc(nc, sizeof *ni),
           *ts = malloc((nc + 1) * sizeof *ts), ss[2] = {0, (uint32_t)plan->n_sources};
  fmmcl_status st = FMMCL_SUCCESS;
  if (!cl || !ns || !ni || !ts) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t c = 0; c < nc && !st; c++)
    cl[c] = (uint32_t)c, ns[c] = (uint32_t)c, ts[c] = (uint32_t)(c * s->p2p_wgs);
  if (!st) ns[nc] = (uint32_t)nc, ts[nc] = (uint32_t)plan->n_targets;
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nc * sizeof *cl, cl, &s->cluster);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (nc + 1) * sizeof *ns, ns, &s->nbr_start);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nc * sizeof *ni, ni, &s->nbr_index);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (nc + 1) * sizeof *ts, ts, &s->tgt_start);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, sizeof ss, ss, &s->src_start);
  free(cl), free(ns), free(ni), free(ts);
  return st;
}

static fmmcl_status direct_create(fmmcl_plan plan, const double *sources, const double *targets) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  fmmcl_bbfmm_state *s;
  fmmcl_status st = fmmcl_bbfmm_state_new(
      plan, "the bbFMM kernels (bbfmm_kernel set) give the potential only: set gradient = 0", &s);
  if (st) return st;
  if (o->dim != 3) return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "the bbFMM kernels need dim = 3");
  s->real_size = o->precision == FMMCL_DOUBLE ? sizeof(double) : sizeof(float);
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  const double *sets[2] = {sources, targets};
  size_t counts[2] = {plan->n_sources, plan->n_targets};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < counts[k]; i++)
      for (int d = 0; d < 3; d++)
        lo[d] = fmin(lo[d], sets[k][3 * i + d]), hi[d] = fmax(hi[d], sets[k][3 * i + d]);
  /* no tree: its centre is the points' bounding box's, which they are sent relative to */
  for (int d = 0; d < 3; d++) s->tree.center[d] = 0.5 * (lo[d] + hi[d]);
  char *pre = fmmcl_bbfmm_prelude(&s->k, s->real_size == sizeof(float));
  if (!pre) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  /* NORD does not matter to the P2P kernel; 2 keeps the other kernels small */
  char defines[96];
  st = fmmcl_bbfmm_params(ctx, o->precision, 2, &s->p2p_wgs, defines, sizeof defines);
  if (st) {
    free(pre);
    return st;
  }
  snprintf(plan->build_options, sizeof plan->build_options, "%s -DNORD=2 %s",
           s->real_size == sizeof(double) ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", defines);
  st = fmmcl_program_build_prelude(ctx, "bbfmm/bbfmm.cl", pre, plan->build_options, &s->program, NULL);
  free(pre);
  if (st) return st;
  if ((st = fmmcl_create_kernel(ctx, s->program, "bbfmm/bbfmm.cl", "bbfmm_p2p", &s->k_p2p))) return st;
  /* one frame for all (the P2P kernel's leaves here are chunks of targets,
   * and the one leaf of every source) */
  size_t chunks = (plan->n_targets + s->p2p_wgs - 1) / s->p2p_wgs;
  st = fmmcl_bbfmm_point_buffers(ctx, s, s->tree.center, chunks, NULL, NULL, NULL, sources, plan->n_sources,
                                 targets, plan->n_targets);
  if (!st) st = lists(plan, s);
  if (!st) FMMCL_CL_TRY(ctx, clFinish(ctx->queue));
  return st;
}

static fmmcl_status direct_execute(fmmcl_plan plan, const double *charges, double *potential,
                                   double *gradient) {
  (void)gradient; /* plan.c refuses a gradient array: the plan has gradient = 0 */
  fmmcl_context ctx = plan->ctx;
  fmmcl_bbfmm_state *s = plan->impl;
  size_t rs = s->real_size;
  double t0 = fmmcl_wall_seconds();
  for (size_t j = 0; j < plan->n_sources; j++)
    if (rs == sizeof(float)) ((float *)s->src_host)[4 * j + 3] = (float)charges[j];
    else ((double *)s->src_host)[4 * j + 3] = charges[j];
  FMMCL_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, s->src, CL_TRUE, 0, plan->n_sources * 4 * rs,
                                         s->src_host, 0, NULL, NULL));
  fmmcl_plan_record(plan, "upload", fmmcl_wall_seconds() - t0);
  fmmcl_event_log log = {0};
  fmmcl_status st = FMMCL_KERNEL_ARGS(
      ctx, s->k_p2p, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_MEM(s->cluster),
      FMMCL_ARG_MEM(s->nbr_start), FMMCL_ARG_MEM(s->nbr_index), FMMCL_ARG_MEM(s->src_start),
      FMMCL_ARG_MEM(s->tgt_start), FMMCL_ARG_MEM(s->pot), FMMCL_ARG_MEM(s->frame));
  if (!st) st = fmmcl_launch(ctx, s->k_p2p, s->n_clusters * s->p2p_wgs, s->p2p_wgs, &log, "p2p");
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  if (st || fl) return st ? st : fl;
  t0 = fmmcl_wall_seconds();
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, s->pot, CL_TRUE, 0, plan->n_targets * rs, s->pot_host, 0,
                                        NULL, NULL));
  for (size_t a = 0; a < plan->n_targets; a++)
    potential[a] = rs == sizeof(float) ? ((float *)s->pot_host)[a] : ((double *)s->pot_host)[a];
  fmmcl_plan_record(plan, "download", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}

const fmmcl_method_ops fmmcl_bbfmm_direct_ops = {.name = "bbfmm_direct",
                                                 .create = direct_create,
                                                 .execute = direct_execute,
                                                 .destroy = fmmcl_bbfmm_destroy,
                                                 .counts = fmmcl_direct_counts,
                                                 .error_bound = fmmcl_direct_error_bound};
