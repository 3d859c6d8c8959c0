/* tree3d_colleagues.c — adjacency of octree cells and the colleague table
 * (same-level adjacent cells) that the interaction lists are built from. */
#include <stdlib.h>

#include "core/internal.h"
#include "tree/tree3d.h"

int fmmcl_tree3d_cells_adjacent(const fmmcl_tree3d_cell *a, const fmmcl_tree3d_cell *b) {
  return fmmcl_tree3d_adjacent_inline(a, b);
}

/* Slot of same-level cell b among a's colleagues, or -1 if not adjacent. */
static int colleague_slot(const fmmcl_tree3d_cell *a, const fmmcl_tree3d_cell *b) {
  int slot = 0;
  for (int d = 0; d < 3; d++) {
    int64_t off = (int64_t)b->anchor[d] - (int64_t)a->anchor[d];
    if (off < -1 || off > 1) return -1;
    slot = slot * 3 + (int)(off + 1);
  }
  return slot;
}

/* A cell's colleagues are among the children of its parent's colleagues,
 * and only of the 8 whose offset per axis is 0 or the side the cell sits on
 * within its parent (low anchor bit 0: -1, 1: +1): the others are two
 * cells away. */
static void find_colleagues(const fmmcl_tree3d *t, size_t i, int32_t *coll) {
  int32_t *mine = coll + FMMCL_TREE3D_COLLEAGUES * i;
  const fmmcl_tree3d_cell *c = &t->cells[i];
  for (int s = 0; s < FMMCL_TREE3D_COLLEAGUES; s++) mine[s] = -1;
  if (c->parent < 0) {
    mine[FMMCL_TREE3D_COLLEAGUES / 2] = (int32_t)i;
    return;
  }
  const int32_t *pc = coll + FMMCL_TREE3D_COLLEAGUES * (size_t)c->parent;
  int side[3];
  for (int d = 0; d < 3; d++) side[d] = (c->anchor[d] & 1) ? 1 : -1;
  for (int m = 0; m < 8; m++) {
    int ox = (m & 4) ? side[0] : 0, oy = (m & 2) ? side[1] : 0, oz = (m & 1) ? side[2] : 0;
    int32_t q = pc[(ox + 1) * 9 + (oy + 1) * 3 + (oz + 1)];
    if (q < 0) continue;
    const fmmcl_tree3d_cell *p = &t->cells[q];
    for (int32_t k = p->child_begin; k < p->child_begin + p->n_children; k++) {
      int slot = colleague_slot(c, &t->cells[k]);
      if (slot >= 0) mine[slot] = k;
    }
  }
}

fmmcl_status fmmcl_tree3d_colleagues(const fmmcl_tree3d *t, int32_t **colleagues) {
  if (!t || !colleagues)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tree3d_colleagues: NULL argument");
  int32_t *coll = malloc(FMMCL_TREE3D_COLLEAGUES * t->n_cells * sizeof(int32_t));
  if (!coll)
    return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "fmmcl_tree3d_colleagues: out of host memory");
  /* level by level: each level reads only the one above */
  for (int l = 0; l < t->n_levels; l++) {
    size_t b = t->level_begin[l], e = t->level_begin[l + 1];
#pragma omp parallel for schedule(static)
    for (size_t i = b; i < e; i++) find_colleagues(t, i, coll);
  }
  *colleagues = coll;
  return FMMCL_SUCCESS;
}
