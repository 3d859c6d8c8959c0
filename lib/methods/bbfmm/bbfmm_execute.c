/* bbfmm_execute.c — one evaluation of a black-box FMM plan on the device:
 * upload charges, P2P, P2M, M2M, M2L (batched GEMM through CLBlast, grouped
 * by transfer vector), L2L, L2P, download; every phase on the device's
 * in-order queue, all data kept there between phases. */
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"

typedef fmmcl_bbfmm_event_log event_log;

cl_event *fmmcl_bbfmm_log_slot(event_log *log, const char *phase) {
  if (log->n == sizeof log->ev / sizeof log->ev[0]) return NULL; /* never: ~1300 GEMMs at depth 8, ~3800 adaptive M2L launches at depth 12 */
  log->phase[log->n] = phase;
  log->ev[log->n] = NULL;
  return &log->ev[log->n++];
}

static void log_finish(fmmcl_plan plan, event_log *log) {
  for (size_t i = 0; i < log->n; i++)
    if (log->ev[i]) {
      fmmcl_plan_record(plan, log->phase[i], fmmcl_event_seconds(log->ev[i]));
      clReleaseEvent(log->ev[i]);
    }
  log->n = 0;
}

static fmmcl_status launch(fmmcl_context ctx, cl_kernel k, size_t groups, size_t local, event_log *log,
                           const char *phase) {
  if (!groups) return FMMCL_SUCCESS;
  size_t global = groups * local;
  FMMCL_CL_TRY(ctx, clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &global, &local, 0, NULL, fmmcl_bbfmm_log_slot(log, phase)));
  return FMMCL_SUCCESS;
}

/* A REAL kernel argument from a double. */
typedef union real_arg { float f; double d; } real_arg;
static real_arg real(const fmmcl_bbfmm_state *s, double v) {
  real_arg r;
  if (s->real_size == sizeof(float)) r.f = (float)v;
  else r.d = v;
  return r;
}

/* Arguments 0..7 of the leaf-grid kernels (P2M, L2P): the points sorted by
 * leaf, their leaf starts, leaves per side, the grid's low corner (the same
 * in x, y, z) and the leaves' half side, the Chebyshev table. */
static cl_int leaf_grid_args(const fmmcl_bbfmm_state *s, cl_kernel k, const cl_mem *points, const cl_mem *start) {
  cl_uint g = 1u << s->tree.depth;
  real_arg lo = real(s, -s->tree.half), h = real(s, s->tree.half / g);
  size_t rs = s->real_size;
  cl_int err = clSetKernelArg(k, 0, sizeof(cl_mem), points);
  err |= clSetKernelArg(k, 1, sizeof(cl_mem), start);
  err |= clSetKernelArg(k, 2, sizeof g, &g);
  for (cl_uint a = 3; a <= 5; a++) err |= clSetKernelArg(k, a, rs, &lo);
  err |= clSetKernelArg(k, 6, rs, &h);
  return err | clSetKernelArg(k, 7, sizeof(cl_mem), &s->tk);
}

/* Arguments of M2M and L2L between level l (gl cells a side) and l + 1. */
static cl_int level_pair_args(const fmmcl_bbfmm_state *s, cl_kernel k, const cl_mem *from, cl_uint gl,
                              const cl_mem *to) {
  cl_int err = clSetKernelArg(k, 0, sizeof(cl_mem), from);
  err |= clSetKernelArg(k, 1, sizeof gl, &gl);
  err |= clSetKernelArg(k, 2, sizeof(cl_mem), &s->schild);
  return err | clSetKernelArg(k, 3, sizeof(cl_mem), to);
}

static fmmcl_status upward(fmmcl_plan plan, fmmcl_bbfmm_state *s, event_log *log) {
  fmmcl_context ctx = plan->ctx;
  int L = s->tree.depth;
  cl_uint g = 1u << L;
  cl_kernel k = s->k_p2m;
  cl_int err = leaf_grid_args(s, k, &s->src, &s->src_start);
  err |= clSetKernelArg(k, 8, sizeof(cl_mem), &s->lv[L].w);
  FMMCL_CL_TRY(ctx, err);
  fmmcl_status st = launch(ctx, k, (size_t)g * g * g, s->n3, log, "p2m");
  for (int l = L - 1; l >= 2 && !st; l--) {
    cl_uint gl = 1u << l;
    FMMCL_CL_TRY(ctx, level_pair_args(s, s->k_m2m, &s->lv[l + 1].w, gl, &s->lv[l].w));
    st = launch(ctx, s->k_m2m, (size_t)gl * gl * gl, s->n3, log, "m2m");
  }
  return st;
}

/* M2L of one level: compress the multipoles (w' = V^T W), translate
 * (l' += C_t w', 216 batched calls of <= 8 GEMMs: a transfer vector is a
 * constant column shift in the parity layout), expand (L += U l'). */
static fmmcl_status m2l_level(fmmcl_plan plan, fmmcl_bbfmm_state *s, int l, event_log *log) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_bbfmm_level *lv = &s->lv[l];
  size_t rs = s->real_size, n3 = s->n3, r = lv->rank;
  fmmcl_status st = fmmcl_gemm(ctx, rs, 1, r, lv->slots, n3, lv->v, 0, n3, lv->w, 0, n3, 0.0, lv->wc,
                                     lv->guard * r, r, fmmcl_bbfmm_log_slot(log, "m2l"));
  unsigned char zero = 0;
  if (!st)
    FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, lv->lc, &zero, 1, 0, lv->slots * r * rs, 0, NULL,
                                          fmmcl_bbfmm_log_slot(log, "m2l")));
  for (int g = 0; g < lv->n_groups && !st; g++)
    st = fmmcl_gemm_batched(ctx, rs, r, lv->pp, r, lv->c, lv->a_off + 8 * g, r, lv->wc, lv->b_off + 8 * g, r,
                                  lv->lc, lv->c_off + 8 * g, r, (size_t)lv->group_size[g], fmmcl_bbfmm_log_slot(log, "m2l"));
  if (!st)
    st = fmmcl_gemm(ctx, rs, 0, n3, lv->slots, r, lv->u, 0, n3, lv->lc, 0, r, 1.0, lv->l, 0, n3,
                          fmmcl_bbfmm_log_slot(log, "m2l"));
  return st;
}

static fmmcl_status downward(fmmcl_plan plan, fmmcl_bbfmm_state *s, event_log *log) {
  fmmcl_context ctx = plan->ctx;
  int L = s->tree.depth;
  size_t rs = s->real_size, n3 = s->n3;
  unsigned char zero = 0;
  for (int l = 2; l <= L; l++)
    FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, s->lv[l].l, &zero, 1, 0, s->lv[l].slots * n3 * rs, 0, NULL,
                                          fmmcl_bbfmm_log_slot(log, "l2l")));
  fmmcl_status st = FMMCL_SUCCESS;
  for (int l = 2; l <= L && !st; l++) {
    st = m2l_level(plan, s, l, log);
    if (st || l == L) break;
    cl_uint gl = 1u << l;
    FMMCL_CL_TRY(ctx, level_pair_args(s, s->k_l2l, &s->lv[l].l, gl, &s->lv[l + 1].l));
    st = launch(ctx, s->k_l2l, (size_t)gl * gl * gl, n3, log, "l2l");
  }
  if (st) return st;
  cl_uint g = 1u << L;
  cl_kernel k = s->k_l2p;
  cl_int err = leaf_grid_args(s, k, &s->tgt, &s->tgt_start);
  err |= clSetKernelArg(k, 8, sizeof(cl_mem), &s->lv[L].l);
  err |= clSetKernelArg(k, 9, sizeof(cl_mem), &s->pot);
  FMMCL_CL_TRY(ctx, err);
  return launch(ctx, k, (size_t)g * g * g, n3, log, "l2p");
}

static fmmcl_status p2p(fmmcl_plan plan, fmmcl_bbfmm_state *s, event_log *log) {
  cl_kernel k = s->k_p2p;
  cl_mem *args[8] = {&s->src, &s->tgt, &s->cluster, &s->nbr_start, &s->nbr_index, &s->src_start, &s->tgt_start, &s->pot};
  cl_int err = CL_SUCCESS;
  for (int i = 0; i < 8; i++) err |= clSetKernelArg(k, i, sizeof(cl_mem), args[i]);
  FMMCL_CL_TRY(plan->ctx, err);
  return launch(plan->ctx, k, s->n_clusters, s->p2p_wgs, log, "p2p");
}

fmmcl_status fmmcl_bbfmm_execute(fmmcl_plan plan, const double *charges, double *potential, double *gradient) {
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
  FMMCL_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, s->src, CL_TRUE, 0, ns * 4 * rs, s->src_host, 0, NULL, NULL));
  fmmcl_plan_record(plan, "upload", fmmcl_wall_seconds() - t0);
  event_log *log = calloc(1, sizeof *log);
  if (!log) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  fmmcl_status st = p2p(plan, s, log);
  if (!st && s->ad) st = fmmcl_bbfmm_adaptive_phases(plan, s, log);
  if (!st && !s->ad) st = upward(plan, s, log);
  if (!st && !s->ad) st = downward(plan, s, log);
  cl_int err = clFinish(ctx->queue);
  if (!st && err != CL_SUCCESS)
    st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "clFinish: %s", fmmcl_cl_error_name(err));
  log_finish(plan, log);
  free(log);
  if (st) return st;
  t0 = fmmcl_wall_seconds();
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, s->pot, CL_TRUE, 0, nt * rs, s->pot_host, 0, NULL, NULL));
  for (size_t a = 0; a < nt; a++)
    potential[tgt_perm[a]] = rs == sizeof(float) ? ((float *)s->pot_host)[a] : ((double *)s->pot_host)[a];
  fmmcl_plan_record(plan, "download", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}
