/* bbfmm_debug.c — a black-box FMM plan's device data read back in the host
 * reference's layout, so that tests compare every operator. */
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"

/* Adaptive plans: depth, half and center only (no points, no leaves). */
const fmmcl_bbfmm_tree *fmmcl_bbfmm_plan_tree(fmmcl_plan plan) {
  return &((fmmcl_bbfmm_state *)plan->impl)->tree;
}

static fmmcl_status read_reals(fmmcl_plan plan, cl_mem buf, size_t count, double *out) {
  fmmcl_bbfmm_state *s = plan->impl;
  void *tmp = malloc(count * s->real_size);
  if (!tmp) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  cl_int err =
      clEnqueueReadBuffer(plan->ctx->queue, buf, CL_TRUE, 0, count * s->real_size, tmp, 0, NULL, NULL);
  if (err == CL_SUCCESS)
    for (size_t i = 0; i < count; i++)
      out[i] = s->real_size == sizeof(float) ? ((float *)tmp)[i] : ((double *)tmp)[i];
  free(tmp);
  if (err != CL_SUCCESS)
    return fmmcl_fail(plan->ctx, fmmcl_status_from_cl(err), "clEnqueueReadBuffer: %s",
                      fmmcl_cl_error_name(err));
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_bbfmm_debug_cells(fmmcl_plan plan, int level, int which, double *out) {
  fmmcl_bbfmm_state *s = plan->impl;
  if (s->ad)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_UNSUPPORTED,
                      "the uniform tree's cells only: this plan is adaptive");
  if (level < 2 || level > s->tree.depth)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT, "no level %d", level);
  fmmcl_bbfmm_level *lv = &s->lv[level];
  double *all = malloc(lv->slots * s->n3 * sizeof *all);
  if (!all) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  fmmcl_status st = read_reals(plan, which ? lv->l : lv->w, lv->slots * s->n3, all);
  size_t g = (size_t)1 << level, gp = g / 2 + 2;
  for (size_t c = 0; c < g * g * g && !st; c++) { /* slot_of in cl/bbfmm.cl */
    size_t ix = c / (g * g), iy = c / g % g, iz = c % g, p = ((ix & 1) << 2) | ((iy & 1) << 1) | (iz & 1);
    size_t slot = p * gp * gp * gp + (((ix >> 1) + 1) * gp + (iy >> 1) + 1) * gp + (iz >> 1) + 1;
    memcpy(out + c * s->n3, all + slot * s->n3, s->n3 * sizeof *out);
  }
  free(all);
  return st;
}

fmmcl_status fmmcl_bbfmm_debug_m2l(fmmcl_plan plan, int level, fmmcl_bbfmm_m2l *m) {
  fmmcl_bbfmm_state *s = plan->impl;
  fmmcl_bbfmm_level *lv = &s->lv[level];
  size_t r = lv->rank, nu = (size_t)s->n3 * r, nc = (size_t)FMMCL_BBFMM_N_TRANSFER * r * r;
  memset(m, 0, sizeof *m);
  m->n = s->n, m->rank = (int)r, m->h = s->tree.half / (double)(1 << level);
  m->u = malloc(nu * sizeof(double)), m->v = malloc(nu * sizeof(double)), m->c = malloc(nc * sizeof(double));
  if (!m->u || !m->v || !m->c) {
    fmmcl_bbfmm_m2l_free(m);
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  fmmcl_status st = read_reals(plan, lv->u, nu, m->u);
  if (!st) st = read_reals(plan, lv->v, nu, m->v);
  if (!st) st = read_reals(plan, lv->c, nc, m->c);
  if (st) fmmcl_bbfmm_m2l_free(m);
  return st;
}
