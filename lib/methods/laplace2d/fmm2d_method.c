/* fmm2d_method.c — the FMM method of FMMCL_LAPLACE_2D: plan create, execute,
 * destroy, work counts, and the test hooks that run single phases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace2d/fmm2d.h"
#include "plan/registry.h"

static fmmcl_status fmm2d_create(fmmcl_plan plan, const double *sources, const double *targets) {
  fmm2d_state *s = calloc(1, sizeof *s);
  if (!s) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->impl = s;
  return fmmcl_fmm2d_setup(plan, s, sources, targets);
}

static fmmcl_status fmm2d_execute(fmmcl_plan plan, const double *charges, double *potential,
                                  double *gradient) {
  fmm2d_state *s = plan->impl;
  fmmcl_status st = fmmcl_fmm2d_upload_charges(plan, s, charges);
  if (!st) st = fmmcl_fmm2d_run_phases(plan, s, FMMCL_FMM2D_PHASES);
  if (!st) st = fmmcl_fmm2d_download(plan, s, potential, gradient);
  return st;
}

static void fmm2d_destroy(fmmcl_plan plan) {
  fmm2d_state *s = plan->impl;
  if (!s) return;
  fmmcl_fmm2d_release(s);
  free(s);
  plan->impl = NULL;
}

/* Units of fmmcl_plan_counts: source points, child-parent shifts (levels
 * 3..L up, 3..L down), translations, targets, point pairs of the U lists. */
fmmcl_status fmmcl_fmm2d_counts(fmmcl_plan plan, const char *phase, double *work) {
  const fmm2d_state *s = plan->impl;
  const fmmcl_quadtree2d *t = s->tree;
  const size_t nl = (size_t)1 << (2 * t->levels);
  double shifts = 0;
  for (int l = 3; l <= t->levels; l++) shifts += (double)((size_t)1 << (2 * l));
  *work = 0;
  if (strcmp(phase, "p2m") == 0) *work = (double)t->n_sources;
  else if (strcmp(phase, "m2m") == 0 || strcmp(phase, "l2l") == 0) *work = shifts;
  else if (strcmp(phase, "m2l") == 0) *work = (double)s->n_trans;
  else if (strcmp(phase, "l2p") == 0) *work = (double)t->n_targets;
  else if (strcmp(phase, "p2p") == 0)
    for (size_t m = 0; m < nl; m++)
      for (size_t u = t->u_begin[m]; u < t->u_begin[m + 1]; u++)
        *work += (double)(t->leaf_tgt[m + 1] - t->leaf_tgt[m]) *
                 (double)(t->leaf_src[t->u_leaf[u] + 1] - t->leaf_src[t->u_leaf[u]]);
  return FMMCL_SUCCESS;
}

static int fmm2d_order(fmmcl_plan plan) { return ((const fmm2d_state *)plan->impl)->order; }

/* Points reach the device relative to their leaf's centre, whose half
 * diagonal bounds the offset; in float the offset is a hi + lo pair of
 * floats, which rounds it as one float would round a frame 2^-24 times
 * that size (the kernels difference hi and lo parts separately, fmm2d.cl). */
static double fmm2d_frame_size(fmmcl_plan plan, int target, size_t index) {
  const fmm2d_state *s = plan->impl;
  const fmmcl_quadtree2d *t = s->tree;
  const double half_diagonal = 0.5 * sqrt(2.0) * fmmcl_quadtree2d_cell_side(t, t->levels);
  (void)target, (void)index; /* every leaf of the uniform tree is the same size */
  return s->real_size == 4 ? 0x1.0p-24 * half_diagonal : half_diagonal;
}

const fmmcl_method_ops fmmcl_fmm2d_ops = {.name = "fmm2d",
                                          .create = fmm2d_create,
                                          .execute = fmm2d_execute,
                                          .destroy = fmm2d_destroy,
                                          .counts = fmmcl_fmm2d_counts,
                                          .order = fmm2d_order,
                                          .frame_size = fmm2d_frame_size,
                                          .resident = 1};

/* ---- test hooks ----------------------------------------------------------- */

static int is_fmm2d(fmmcl_plan plan) { return fmmcl_plan_runs(plan, fmmcl_fmm2d_ops.name) && plan->impl; }

fmmcl_status fmmcl_fmm2d_debug_tree(fmmcl_plan plan, const fmmcl_quadtree2d **tree, int *order) {
  if (!is_fmm2d(plan))
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_INVALID_ARGUMENT, "not a 2D FMM plan");
  const fmm2d_state *s = plan->impl;
  *tree = s->tree, *order = s->order;
  return FMMCL_SUCCESS;
}

/* Expansions between the host's double complex and the device's REAL2. */
static fmmcl_status move_expansion(fmmcl_plan plan, fmm2d_state *s, cl_mem m, const double complex *in,
                                   double complex *out) {
  fmmcl_context ctx = plan->ctx;
  const size_t n = s->tree->n_cells * s->nrow, bytes = 2 * n * s->real_size;
  void *buf = malloc(bytes);
  if (!buf) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  cl_int err = CL_SUCCESS;
  if (in) {
    for (size_t i = 0; i < n; i++)
      for (int c = 0; c < 2; c++) {
        double v = c ? cimag(in[i]) : creal(in[i]);
        if (s->real_size == 4) ((float *)buf)[2 * i + c] = (float)v;
        else ((double *)buf)[2 * i + c] = v;
      }
    err = clEnqueueWriteBuffer(ctx->queue, m, CL_TRUE, 0, bytes, buf, 0, NULL, NULL);
  } else {
    err = clEnqueueReadBuffer(ctx->queue, m, CL_TRUE, 0, bytes, buf, 0, NULL, NULL);
    for (size_t i = 0; !err && i < n; i++) {
      double re = s->real_size == 4 ? ((float *)buf)[2 * i] : ((double *)buf)[2 * i];
      double im = s->real_size == 4 ? ((float *)buf)[2 * i + 1] : ((double *)buf)[2 * i + 1];
      out[i] = re + I * im;
    }
  }
  free(buf);
  FMMCL_CL_TRY(ctx, err);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_fmm2d_debug_run(fmmcl_plan plan, const double *charges, unsigned mask,
                                   const double complex *M_in, const double complex *L_in,
                                   double complex *M_out, double complex *L_out, double *out) {
  if (!is_fmm2d(plan))
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_INVALID_ARGUMENT, "not a 2D FMM plan");
  fmm2d_state *s = plan->impl;
  fmmcl_status st = charges ? fmmcl_fmm2d_upload_charges(plan, s, charges) : FMMCL_SUCCESS;
  if (!st && M_in) st = move_expansion(plan, s, s->M, M_in, NULL);
  if (!st && L_in) st = move_expansion(plan, s, s->L, L_in, NULL);
  if (!st) st = L_in ? fmmcl_fmm2d_run_phases_keep_l(plan, s, mask) : fmmcl_fmm2d_run_phases(plan, s, mask);
  if (!st && M_out) st = move_expansion(plan, s, s->M, NULL, M_out);
  if (!st && L_out) st = move_expansion(plan, s, s->L, NULL, L_out);
  if (!st && out) {
    const size_t nt = s->tree->n_targets;
    void *buf = malloc(4 * nt * s->real_size);
    if (!buf) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
    cl_int err =
        clEnqueueReadBuffer(plan->ctx->queue, s->out, CL_TRUE, 0, 4 * nt * s->real_size, buf, 0, NULL, NULL);
    for (size_t i = 0; !err && i < nt; i++)
      for (int c = 0; c < 3; c++)
        out[3 * i + c] = s->real_size == 4 ? ((float *)buf)[4 * i + c] : ((double *)buf)[4 * i + c];
    free(buf);
    FMMCL_CL_TRY(plan->ctx, err);
  }
  return st;
}
