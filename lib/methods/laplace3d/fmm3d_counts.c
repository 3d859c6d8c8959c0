/* fmm3d_counts.c — the work of each phase of a 3D FMM or treecode plan,
 * counted on the host tree and lists exactly as fmm3d_buffers.c packs the
 * launches (see fmmcl_plan_counts for the units). */
#include <string.h>

#include "methods/laplace3d/fmm3d.h"

/* M2M: every child of every non-leaf cell holding sources (upload_levels). */
double fmmcl_fmm3d_m2m_shifts(const fmmcl_tree3d *t) {
  double n = 0;
  for (size_t i = 0; i < t->n_cells; i++) {
    const fmmcl_tree3d_cell *c = &t->cells[i];
    if (!fmmcl_tree3d_is_leaf(c) && fmmcl_tree3d_n_src(c)) n += c->n_children;
  }
  return n;
}

/* L2L: cells at level >= 3 holding targets, one shift from their parent
 * (above level 2 the local expansions are zero, so none are launched). */
double fmmcl_fmm3d_l2l_shifts(const fmmcl_tree3d *t) {
  double n = 0;
  for (int l = 3; l < t->n_levels; l++)
    for (size_t i = t->level_begin[l]; i < t->level_begin[l + 1]; i++)
      n += fmmcl_tree3d_n_tgt(&t->cells[i]) > 0;
  return n;
}

fmmcl_status fmmcl_fmm3d_counts(fmmcl_plan plan, const char *phase, double *work) {
  const fmm3d_state *s = plan->impl;
  const fmmcl_tree3d *t = s->tree;
  const int fmm = !s->treecode;
  if (strcmp(phase, "p2m") == 0) *work = (double)t->n_sources;
  else if (strcmp(phase, "m2m") == 0) *work = fmmcl_fmm3d_m2m_shifts(t);
  else if (strcmp(phase, "l2l") == 0) *work = fmm ? fmmcl_fmm3d_l2l_shifts(t) : 0;
  else if (strcmp(phase, "l2p") == 0) *work = fmm ? (double)t->n_targets : 0;
  else if (!fmm && (strcmp(phase, "m2l") == 0 || strcmp(phase, "p2l") == 0)) *work = 0;
  else {
    /* list phases: the statistics the performance model uses count the
     * same units (point pairs, cell pairs, point-cell evaluations) */
    fmmcl_tree3d_stats st;
    fmmcl_status status = fmmcl_tree3d_stats_compute(t, fmm ? &s->fmm : NULL, fmm ? NULL : &s->tc, &st);
    if (status) return fmmcl_fail(plan->ctx, status, "counting list work: %s", fmmcl_last_error(NULL));
    if (strcmp(phase, "p2p") == 0) *work = fmm ? st.u.interactions : st.near.interactions;
    else if (strcmp(phase, "m2p") == 0) *work = fmm ? st.w.interactions : st.far.interactions;
    else if (strcmp(phase, "m2l") == 0) *work = st.v.interactions;
    else if (strcmp(phase, "p2l") == 0) *work = st.x.interactions;
    else return fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "fmm3d counts: unhandled phase %s", phase);
  }
  return FMMCL_SUCCESS;
}
