/* tree3d_refit.c — an octree kept for new positions: whether the points,
 * sorted again in their new root cube, give the same cells (every split of
 * the refinement decided as before), and the cells' new point ranges and
 * geometry. The lists, which read only the cells' keys and which of them
 * hold sources and targets, then stay valid. */
#include "core/internal.h"
#include "tree/tree3d.h"

int fmmcl_tree3d_refit(const fmmcl_tree3d *t, const fmmcl_morton3d_cube *cube, const uint32_t *src_ranges,
                       const uint32_t *tgt_ranges, fmmcl_tree3d_cell *cells, size_t *n_overfull) {
  int same = 1;
  size_t overfull = 0;
#pragma omp parallel for schedule(static) reduction(&& : same) reduction(+ : overfull) if (t->n_cells > 4096)
  for (size_t i = 0; i < t->n_cells; i++) {
    const fmmcl_tree3d_cell *c = &t->cells[i];
    const size_t ns = src_ranges[2 * i + 1] - src_ranges[2 * i],
                 nt = tgt_ranges[2 * i + 1] - tgt_ranges[2 * i];
    /* the refinement's rule (tree3d_build.c, needs_split) */
    const int split = c->level < t->max_level && (ns > t->leaf_size || nt > t->leaf_size);
    int ok = split == !fmmcl_tree3d_is_leaf(c) && (ns > 0) == (fmmcl_tree3d_n_src(c) > 0) &&
             (nt > 0) == (fmmcl_tree3d_n_tgt(c) > 0);
    /* no point in a child the tree lacks: the children hold all */
    size_t sum_s = 0, sum_t = 0;
    for (int32_t k = c->child_begin; ok && k < c->child_begin + c->n_children; k++)
      sum_s += src_ranges[2 * k + 1] - src_ranges[2 * k], sum_t += tgt_ranges[2 * k + 1] - tgt_ranges[2 * k];
    if (ok && c->n_children) ok = sum_s == ns && sum_t == nt;
    same = same && ok;
    fmmcl_tree3d_cell *d = &cells[i];
    *d = *c;
    d->src_begin = src_ranges[2 * i], d->src_end = src_ranges[2 * i + 1];
    d->tgt_begin = tgt_ranges[2 * i], d->tgt_end = tgt_ranges[2 * i + 1];
    fmmcl_tree3d_cell_geometry(cube, d);
    overfull += !c->n_children && (ns > t->leaf_size || nt > t->leaf_size);
  }
  if (!same) return 0;
  /* the root holds every point (its range is all keys) */
  if (t->n_cells && (cells[0].src_begin != 0 || cells[0].src_end != t->n_sources || cells[0].tgt_begin != 0 ||
                     cells[0].tgt_end != t->n_targets))
    return 0;
  *n_overfull = overfull;
  return 1;
}
