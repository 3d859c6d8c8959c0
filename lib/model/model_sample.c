/* model_sample.c — what the model is fitted on and predicts from: the work
 * and granule counts of an FMM for given points and leaf size (host tree
 * and lists, no device), and one timed sample of a real plan. */
#include <stdlib.h>
#include <string.h>

#include "methods/laplace3d/fmm3d.h"
#include "model/model.h"
#include "plan/registry.h"

/* Rows of a list with at least one entry: the work-groups its kernel runs. */
static double nonempty_rows(const fmmcl_tree3d_csr *c) {
  double n = 0;
  for (size_t r = 0; r < c->n_rows; r++) n += c->offsets[r + 1] > c->offsets[r];
  return n;
}

/* Levels with at least one M2M (non-leaf cells holding sources) or L2L
 * (cells at level >= 3 holding targets) shift: one launch each. */
static void level_launches(const fmmcl_tree3d *t, double *m2m, double *l2l) {
  *m2m = *l2l = 0;
  for (int l = 0; l < t->n_levels; l++) {
    int up = 0, down = 0;
    for (size_t i = t->level_begin[l]; i < t->level_begin[l + 1]; i++) {
      const fmmcl_tree3d_cell *c = &t->cells[i];
      up |= !fmmcl_tree3d_is_leaf(c) && fmmcl_tree3d_n_src(c) > 0;
      down |= l >= 3 && fmmcl_tree3d_n_tgt(c) > 0;
    }
    *m2m += up, *l2l += down;
  }
}

void fmmcl_model_tree_work(const fmmcl_tree3d *t, const fmmcl_tree3d_fmm_lists *l,
                           double work[FMMCL_MODEL_NWORK]) {
  memset(work, 0, FMMCL_MODEL_NWORK * sizeof *work);
  fmmcl_tree3d_stats s;
  if (fmmcl_tree3d_stats_compute(t, l, NULL, &s)) return; /* only fails without lists */
  double *g = work + FMMCL_MODEL_NPHASES;
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
  work[FMMCL_MODEL_OVERHEAD] = (double)t->n_targets;
  work[FMMCL_MODEL_COMBINE] = (double)t->n_targets;
  g[FMMCL_MODEL_P2M] = g[FMMCL_MODEL_L2P] = (double)t->n_leaves; /* one work-group per leaf */
  level_launches(t, &g[FMMCL_MODEL_M2M], &g[FMMCL_MODEL_L2L]);
  g[FMMCL_MODEL_M2L] = nonempty_rows(&l->v);
  g[FMMCL_MODEL_P2L] = nonempty_rows(&l->x);
  g[FMMCL_MODEL_M2P] = nonempty_rows(&l->w);
  g[FMMCL_MODEL_P2P] = (double)s.u.entries; /* leaf pairs */
}

fmmcl_status fmmcl_model_counts(size_t n_sources, const double *sources, size_t n_targets,
                                const double *targets, size_t leaf_size, fmmcl_precision prec,
                                double work[FMMCL_MODEL_NWORK]) {
  fmmcl_tree3d *t = NULL;
  /* the depth limit of fmm3d_setup.c, so that the tree is the plan's */
  fmmcl_status st = fmmcl_tree3d_build(n_sources, sources, targets ? n_targets : 0, targets, leaf_size,
                                       prec == FMMCL_SINGLE ? 20 : 0, &t);
  if (st) return st;
  fmmcl_tree3d_fmm_lists lists;
  memset(&lists, 0, sizeof lists);
  st = fmmcl_tree3d_fmm_lists_build(t, &lists);
  if (!st) fmmcl_model_tree_work(t, &lists, work);
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
  if (!fmmcl_plan_runs(plan, "fmm3d"))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "model samples come from 3D FMM plans");
  if (repeats < 1 || repeats > 64) repeats = 3;
  memset(out, 0, sizeof *out);
  const fmm3d_state *s = plan->impl;
  const size_t nt = plan->n_targets;
  fmmcl_model_tree_work(s->tree, &s->fmm, out->work);
  /* two results of the plan's size for the host sum of a hybrid plan */
  double *pot = malloc(nt * sizeof *pot), *grad = malloc(3 * nt * sizeof *grad);
  double *pot2 = calloc(nt, sizeof *pot2), *grad2 = calloc(3 * nt, sizeof *grad2);
  double *times = calloc((size_t)repeats * FMMCL_MODEL_NPHASES, sizeof *times);
  fmmcl_status st = pot && grad && pot2 && grad2 && times
                        ? FMMCL_SUCCESS
                        : fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  /* one run first: its kernels' first launches pay one-time costs */
  for (int r = -1; !st && r < repeats; r++) {
    const double t0 = fmmcl_wall_seconds();
    st = fmmcl_plan_execute(plan, charges, pot, grad);
    const double wall = fmmcl_wall_seconds() - t0;
    if (st || r < 0) continue;
    double recorded = 0;
    for (size_t i = 0; i < plan->n_phases; i++)
      for (int ph = 0; ph < FMMCL_MODEL_OVERHEAD; ph++)
        if (strcmp(plan->phases[i].name, fmmcl_model_phase_names[ph]) == 0) {
          times[(size_t)ph * repeats + r] += plan->phases[i].seconds;
          recorded += plan->phases[i].seconds;
        }
    /* profiling events time kernels alone; the rest of the wall time is
     * launch gaps and synchronisation (never negative: clocks differ) */
    times[(size_t)FMMCL_MODEL_OVERHEAD * repeats + r] = wall > recorded ? wall - recorded : 0;
    const double t1 = fmmcl_wall_seconds();
    fmmcl_hybrid_accumulate(nt, 3, pot2, grad2, pot, grad);
    times[(size_t)FMMCL_MODEL_COMBINE * repeats + r] = fmmcl_wall_seconds() - t1;
  }
  for (int ph = 0; !st && ph < FMMCL_MODEL_NPHASES; ph++) {
    double *t = times + (size_t)ph * repeats;
    qsort(t, (size_t)repeats, sizeof *t, cmp_double);
    out->seconds[ph] = t[repeats / 2]; /* the median */
  }
  out->order = s->order;
  out->n_sources = plan->n_sources;
  out->n_targets = nt;
  free(pot), free(grad), free(pot2), free(grad2);
  free(times);
  return st;
}
