/* bbfmm_execute.c — one evaluation of a black-box FMM plan on the device:
 * upload charges, P2P, P2M, M2M, M2L (batched GEMM through CLBlast, grouped
 * by transfer vector), L2L, L2P, download; every phase on the device's
 * in-order queue, all data kept there between phases. */
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"

/* groups work-groups of local work-items, timed under phase. */
static fmmcl_status launch(fmmcl_context ctx, cl_kernel k, size_t groups, size_t local, fmmcl_event_log *log,
                           const char *phase) {
  return fmmcl_launch(ctx, k, groups * local, local, log, phase);
}

/* Arguments 0..4 of the leaf-grid kernels (P2M, L2P): the points sorted by
 * leaf (relative to their leaf's centre), their leaf starts, leaves per
 * side, the leaves' half side, the Chebyshev table. */
static fmmcl_status leaf_grid_args(fmmcl_context ctx, const fmmcl_bbfmm_state *s, cl_kernel k, cl_mem points,
                                   cl_mem start) {
  cl_uint g = 1u << s->tree.depth;
  const double h = s->tree.half / g;
  return FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(points), FMMCL_ARG_MEM(start), FMMCL_ARG_UINT(g),
                           FMMCL_ARG_REAL(h, s->real_size), FMMCL_ARG_MEM(s->tk));
}

/* Arguments of M2M and L2L between level l (gl cells a side) and l + 1. */
static fmmcl_status level_pair_args(fmmcl_context ctx, const fmmcl_bbfmm_state *s, cl_kernel k, cl_mem from,
                                    cl_uint gl, cl_mem to) {
  return FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(from), FMMCL_ARG_UINT(gl), FMMCL_ARG_MEM(s->schild),
                           FMMCL_ARG_MEM(to));
}

static fmmcl_status upward(fmmcl_plan plan, fmmcl_bbfmm_state *s, fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  int L = s->tree.depth;
  cl_uint g = 1u << L;
  cl_kernel k = s->k_p2m;
  fmmcl_status st = leaf_grid_args(ctx, s, k, s->src, s->src_start);
  if (!st) st = FMMCL_KERNEL_ARGS(ctx, k, 5, FMMCL_ARG_MEM(s->lv[L].w));
  if (!st) st = launch(ctx, k, (size_t)g * g * g, s->n3, log, "p2m");
  for (int l = L - 1; l >= 2 && !st; l--) {
    cl_uint gl = 1u << l;
    st = level_pair_args(ctx, s, s->k_m2m, s->lv[l + 1].w, gl, s->lv[l].w);
    if (!st) st = launch(ctx, s->k_m2m, (size_t)gl * gl * gl, s->n3, log, "m2m");
  }
  return st;
}

/* M2L of one level: compress the multipoles (w' = V^T W), translate
 * (l' += C_t w', 216 batched calls of <= 8 GEMMs: a transfer vector is a
 * constant column shift in the parity layout), expand (L += U l'). */
static fmmcl_status m2l_level(fmmcl_plan plan, fmmcl_bbfmm_state *s, int l, fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_bbfmm_level *lv = &s->lv[l];
  size_t rs = s->real_size, n3 = s->n3, r = lv->rank;
  fmmcl_status st = fmmcl_gemm(ctx, rs, 1, r, lv->slots, n3, lv->v, 0, n3, lv->w, 0, n3, 0.0, lv->wc,
                               lv->guard * r, r, fmmcl_event_log_slot(log, "m2l"));
  unsigned char zero = 0;
  if (!st)
    FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, lv->lc, &zero, 1, 0, lv->slots * r * rs, 0, NULL,
                                          fmmcl_event_log_slot(log, "m2l")));
  for (int g = 0; g < lv->n_groups && !st; g++)
    st = fmmcl_gemm_batched(ctx, rs, r, lv->pp, r, lv->c, lv->a_off + 8 * g, r, lv->wc, lv->b_off + 8 * g, r,
                            lv->lc, lv->c_off + 8 * g, r, (size_t)lv->group_size[g],
                            fmmcl_event_log_slot(log, "m2l"));
  if (!st)
    st = fmmcl_gemm(ctx, rs, 0, n3, lv->slots, r, lv->u, 0, n3, lv->lc, 0, r, 1.0, lv->l, 0, n3,
                    fmmcl_event_log_slot(log, "m2l"));
  return st;
}

static fmmcl_status downward(fmmcl_plan plan, fmmcl_bbfmm_state *s, fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  int L = s->tree.depth;
  size_t rs = s->real_size, n3 = s->n3;
  unsigned char zero = 0;
  for (int l = 2; l <= L; l++)
    FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, s->lv[l].l, &zero, 1, 0, s->lv[l].slots * n3 * rs, 0,
                                          NULL, fmmcl_event_log_slot(log, "l2l")));
  fmmcl_status st = FMMCL_SUCCESS;
  for (int l = 2; l <= L && !st; l++) {
    st = m2l_level(plan, s, l, log);
    if (st || l == L) break;
    cl_uint gl = 1u << l;
    st = level_pair_args(ctx, s, s->k_l2l, s->lv[l].l, gl, s->lv[l + 1].l);
    if (!st) st = launch(ctx, s->k_l2l, (size_t)gl * gl * gl, n3, log, "l2l");
  }
  if (st) return st;
  cl_uint g = 1u << L;
  cl_kernel k = s->k_l2p;
  st = leaf_grid_args(ctx, s, k, s->tgt, s->tgt_start);
  if (!st) st = FMMCL_KERNEL_ARGS(ctx, k, 5, FMMCL_ARG_MEM(s->lv[L].l), FMMCL_ARG_MEM(s->pot));
  return st ? st : launch(ctx, k, (size_t)g * g * g, n3, log, "l2p");
}

static fmmcl_status p2p(fmmcl_plan plan, fmmcl_bbfmm_state *s, fmmcl_event_log *log) {
  cl_kernel k = s->k_p2p;
  fmmcl_status st = FMMCL_KERNEL_ARGS(
      plan->ctx, k, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_MEM(s->cluster),
      FMMCL_ARG_MEM(s->nbr_start), FMMCL_ARG_MEM(s->nbr_index), FMMCL_ARG_MEM(s->src_start),
      FMMCL_ARG_MEM(s->tgt_start), FMMCL_ARG_MEM(s->pot), FMMCL_ARG_MEM(s->frame));
  return st ? st : launch(plan->ctx, k, s->n_clusters, s->p2p_wgs, log, "p2p");
}

fmmcl_status fmmcl_bbfmm_execute(fmmcl_plan plan, const double *charges, double *potential,
                                 double *gradient) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_bbfmm_state *s = plan->impl;
  /* sorted order: the uniform tree's or the adaptive one's */
  const size_t *src_perm = s->ad ? s->ad->tree->source_perm : s->tree.src_perm;
  const size_t *tgt_perm = s->ad ? s->ad->tree->target_perm : s->tree.tgt_perm;
  size_t ns = plan->n_sources, nt = plan->n_targets;
  size_t rs = s->real_size;
  double t0 = fmmcl_wall_seconds();
  for (size_t j = 0; j < ns; j++) {
    double q = charges[src_perm[j]];
    if (rs == sizeof(float)) ((float *)s->src_host)[4 * j + 3] = (float)q;
    else ((double *)s->src_host)[4 * j + 3] = q;
  }
  FMMCL_CL_TRY(ctx,
               clEnqueueWriteBuffer(ctx->queue, s->src, CL_TRUE, 0, ns * 4 * rs, s->src_host, 0, NULL, NULL));
  fmmcl_plan_record(plan, "upload", fmmcl_wall_seconds() - t0);
  fmmcl_event_log log = {0};
  fmmcl_status st = p2p(plan, s, &log);
  if (!st && s->ad) st = fmmcl_bbfmm_adaptive_phases(plan, s, &log);
  if (!st && !s->ad) st = upward(plan, s, &log);
  if (!st && !s->ad) st = downward(plan, s, &log);
  /* flushed on failure too: the events must not leak */
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  if (st || fl) return st ? st : fl;
  t0 = fmmcl_wall_seconds();
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, s->pot, CL_TRUE, 0, nt * rs, s->pot_host, 0, NULL, NULL));
  for (size_t a = 0; a < nt; a++)
    potential[tgt_perm[a]] = rs == sizeof(float) ? ((float *)s->pot_host)[a] : ((double *)s->pot_host)[a];
  fmmcl_plan_record(plan, "download", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}
