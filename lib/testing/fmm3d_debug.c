/* fmm3d_debug.c — test hooks of the 3D FMM and treecode: run chosen phases
 * and read the expansions back in the unscaled layout of expansions3d.h, so
 * each device operator can be checked against its plain-C reference. */
#include <math.h>
#include <stdlib.h>

#include "methods/laplace3d/fmm3d.h"
#include "plan/registry.h"

static int is_fmm3d_plan(fmmcl_plan plan) {
  return fmmcl_plan_runs(plan, "fmm3d") || fmmcl_plan_runs(plan, "treecode3d") ||
         fmmcl_plan_runs(plan, "fmm3d_ext") || fmmcl_plan_runs(plan, "treecode3d_ext");
}

fmmcl_status fmmcl_fmm3d_debug_tree(fmmcl_plan plan, const fmmcl_tree3d **tree, int *order) {
  if (!is_fmm3d_plan(plan) || !tree || !order)
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_INVALID_ARGUMENT, "not a 3D FMM/treecode plan");
  const fmm3d_state *s = plan->impl;
  *tree = s->tree;
  *order = s->order;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_fmm3d_debug_treecode_lists(fmmcl_plan plan, const fmmcl_tree3d_treecode_lists **lists) {
  if (!is_fmm3d_plan(plan) || !lists || !((const fmm3d_state *)plan->impl)->treecode)
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_INVALID_ARGUMENT, "not a 3D treecode plan");
  *lists = &((const fmm3d_state *)plan->impl)->tc;
  return FMMCL_SUCCESS;
}

/* Device Mhat = M / s^n and Lhat = L * s^(n+1) (cl/expansions3d.cl), s the
 * cell's side: factor of degree n is s^-n (multipole) or s^(n+1) (local);
 * to_device 0 inverts it. */
static double scale_factor(double side, int n, int local, int to_device) {
  double f = local ? pow(side, n + 1) : pow(side, -n);
  return to_device ? f : 1.0 / f;
}

/* Converts between host doubles (unscaled) and device REALs (scaled). */
static void convert(const fmm3d_state *s, int local, int to_device, double *host, void *dev) {
  const fmmcl_tree3d *t = s->tree;
  for (size_t c = 0; c < t->n_cells; c++) {
    const double side = 2 * t->cells[c].half_width;
    for (int n = 0; n <= s->order; n++)
      for (int m = 0; m <= n; m++) {
        const size_t k = 2 * (c * s->ncoef + (size_t)(n * (n + 1) / 2 + m));
        const double f = scale_factor(side, n, local, to_device);
        for (int r = 0; r < 2; r++) {
          if (to_device) {
            if (s->real_size == 4) ((float *)dev)[k + r] = (float)(host[k + r] * f);
            else ((double *)dev)[k + r] = host[k + r] * f;
          } else {
            host[k + r] = f * (s->real_size == 4 ? (double)((float *)dev)[k + r] : ((double *)dev)[k + r]);
          }
        }
      }
  }
}

static fmmcl_status transfer(fmmcl_plan plan, fmm3d_state *s, cl_mem buf, int local, int to_device,
                             double *host) {
  fmmcl_context ctx = plan->ctx;
  const size_t bytes = s->tree->n_cells * s->ncoef * 2 * s->real_size;
  void *tmp = malloc(bytes);
  if (!tmp) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  cl_int err;
  if (to_device) {
    convert(s, local, 1, host, tmp);
    err = clEnqueueWriteBuffer(ctx->queue, buf, CL_TRUE, 0, bytes, tmp, 0, NULL, NULL);
  } else {
    err = clEnqueueReadBuffer(ctx->queue, buf, CL_TRUE, 0, bytes, tmp, 0, NULL, NULL);
    if (err == CL_SUCCESS) convert(s, local, 0, host, tmp);
  }
  free(tmp);
  FMMCL_CL_TRY(ctx, err);
  return FMMCL_SUCCESS;
}

/* The Hessian buffer (6 per sorted target) into hess, unscaled (1/unit^3). */
static fmmcl_status read_hessian(fmmcl_plan plan, const fmm3d_state *s, double *hess) {
  const size_t n = 6 * s->tree->n_targets;
  void *tmp = malloc(n * s->real_size);
  if (!tmp) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  cl_int err =
      clEnqueueReadBuffer(plan->ctx->queue, s->hess, CL_TRUE, 0, n * s->real_size, tmp, 0, NULL, NULL);
  const double inv = 1.0 / s->unit;
  for (size_t i = 0; err == CL_SUCCESS && i < n; i++)
    hess[i] = (s->real_size == 4 ? (double)((float *)tmp)[i] : ((double *)tmp)[i]) * inv * inv * inv;
  free(tmp);
  FMMCL_CL_TRY(plan->ctx, err);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_fmm3d_debug_run(fmmcl_plan plan, const double *charges, unsigned mask, const double *M_in,
                                   const double *L_in, double *M_out, double *L_out, double *out) {
  return fmmcl_fmm3d_debug_run_ext(plan, charges, NULL, mask, M_in, L_in, M_out, L_out, out, NULL);
}

fmmcl_status fmmcl_fmm3d_debug_run_ext(fmmcl_plan plan, const double *charges, const double *dipoles,
                                       unsigned mask, const double *M_in, const double *L_in, double *M_out,
                                       double *L_out, double *out, double *hess) {
  if (!is_fmm3d_plan(plan) || !charges)
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_INVALID_ARGUMENT, "not a 3D FMM/treecode plan");
  fmm3d_state *s = plan->impl;
  if ((dipoles && !s->dipoles) || (hess && !s->hessian))
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT, "the plan has no dipoles or no Hessian");
  fmmcl_status st = fmmcl_fmm3d_upload_charges(plan, s, charges);
  if (!st && (s->dipoles || s->hessian)) st = fmmcl_fmm3d_upload_dipoles(plan, s, dipoles);
  if (!st && M_in) st = transfer(plan, s, s->M, 0, 1, (double *)M_in);
  if (!st && L_in && s->L) st = transfer(plan, s, s->L, 1, 1, (double *)L_in);
  if (!st) st = fmmcl_fmm3d_run_phases(plan, s, mask);
  if (!st && M_out) st = transfer(plan, s, s->M, 0, 0, M_out);
  if (!st && L_out && s->L) st = transfer(plan, s, s->L, 1, 0, L_out);
  if (!st && out) {
    const size_t n = 4 * s->tree->n_targets;
    void *tmp = malloc(n * s->real_size);
    if (!tmp) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
    cl_int err =
        clEnqueueReadBuffer(plan->ctx->queue, s->out, CL_TRUE, 0, n * s->real_size, tmp, 0, NULL, NULL);
    /* from the device frame's units: gradient 1/unit^2, potential 1/unit */
    const double inv = 1.0 / s->unit;
    for (size_t i = 0; err == CL_SUCCESS && i < n; i++)
      out[i] = (s->real_size == 4 ? (double)((float *)tmp)[i] : ((double *)tmp)[i]) *
               (i % 4 == 3 ? inv : inv * inv);
    free(tmp);
    FMMCL_CL_TRY(plan->ctx, err);
  }
  if (!st && hess) st = read_hessian(plan, s, hess);
  return st;
}
