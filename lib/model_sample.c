/* model_sample.c — what the model is fitted on and predicts from: the work
 * counts of an FMM for given points and leaf size (host tree and lists, no
 * device), and one timed sample of a real plan. */
#include <stdlib.h>
#include <string.h>

#include "fmm3d.h"
#include "model.h"

fmmcl_status fmmcl_model_counts(size_t n_sources, const double *sources, size_t n_targets,
                                const double *targets, size_t leaf_size, fmmcl_precision prec,
                                double work[FMMCL_MODEL_NPHASES]) {
  fmmcl_tree3d *t = NULL;
  /* the depth limit of fmm3d_setup.c, so that the tree is the plan's */
  fmmcl_status st = fmmcl_tree3d_build(n_sources, sources, targets ? n_targets : 0, targets, leaf_size,
                                       prec == FMMCL_SINGLE ? 20 : 0, &t);
  if (st) return st;
  fmmcl_tree3d_fmm_lists lists;
  memset(&lists, 0, sizeof lists);
  st = fmmcl_tree3d_fmm_lists_build(t, &lists);
  fmmcl_tree3d_stats s;
  if (!st) st = fmmcl_tree3d_stats_compute(t, &lists, NULL, &s);
  if (!st) {
    memset(work, 0, FMMCL_MODEL_NPHASES * sizeof *work);
    work[FMMCL_MODEL_P2M] = (double)t->n_sources;
    work[FMMCL_MODEL_M2M] = fmmcl_fmm3d_m2m_shifts(t);
    work[FMMCL_MODEL_M2L] = s.v.interactions;
    work[FMMCL_MODEL_P2L] = s.x.interactions;
    work[FMMCL_MODEL_L2L] = fmmcl_fmm3d_l2l_shifts(t);
    work[FMMCL_MODEL_L2P] = (double)t->n_targets;
    work[FMMCL_MODEL_M2P] = s.w.interactions;
    work[FMMCL_MODEL_P2P] = s.u.interactions;
    work[FMMCL_MODEL_UPLOAD] = (double)t->n_sources;
    work[FMMCL_MODEL_DOWNLOAD] = (double)t->n_targets;
  }
  fmmcl_tree3d_fmm_lists_free(&lists);
  fmmcl_tree3d_destroy(t);
  return st;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

fmmcl_status fmmcl_model_plan_sample(fmmcl_plan plan, const double *charges, int repeats,
                                     fmmcl_model_sample *out) {
  fmmcl_context ctx = plan->ctx;
  if (plan->ops != &fmmcl_fmm3d_ops)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "model samples come from 3D FMM plans");
  if (repeats < 1 || repeats > 64) repeats = 3;
  memset(out, 0, sizeof *out);
  double *pot = malloc(plan->n_targets * sizeof *pot);
  double *times = calloc((size_t)repeats * FMMCL_MODEL_NPHASES, sizeof *times);
  fmmcl_status st = pot && times ? FMMCL_SUCCESS : fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (int ph = 0; !st && ph < FMMCL_MODEL_NPHASES; ph++) {
    const char *name = fmmcl_model_phase_names[ph];
    if (ph == FMMCL_MODEL_UPLOAD) out->work[ph] = (double)plan->n_sources;
    else if (ph == FMMCL_MODEL_DOWNLOAD) out->work[ph] = (double)plan->n_targets;
    else st = fmmcl_plan_counts(plan, name, &out->work[ph]);
  }
  /* one run first: its kernels' first launches pay one-time costs */
  for (int r = -1; !st && r < repeats; r++) {
    st = fmmcl_plan_execute(plan, charges, pot, NULL);
    if (st || r < 0) continue;
    for (size_t i = 0; i < plan->n_phases; i++)
      for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++)
        if (strcmp(plan->phases[i].name, fmmcl_model_phase_names[ph]) == 0)
          times[(size_t)ph * repeats + r] += plan->phases[i].seconds;
  }
  for (int ph = 0; !st && ph < FMMCL_MODEL_NPHASES; ph++) {
    double *t = times + (size_t)ph * repeats;
    qsort(t, (size_t)repeats, sizeof *t, cmp_double);
    out->seconds[ph] = t[repeats / 2]; /* the median */
  }
  out->order = ((const fmm3d_state *)plan->impl)->order;
  out->n_sources = plan->n_sources;
  out->n_targets = plan->n_targets;
  free(pot);
  free(times);
  return st;
}
