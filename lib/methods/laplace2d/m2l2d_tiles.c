/* m2l2d_tiles.c — which tiles of the quadtree's levels m2l2d_tile computes:
 * every tile (the benchmark's periodic lists), or only those holding a cell
 * with a non-empty interaction list (the FMM: clustered points leave most
 * tiles of the deep levels empty). */
#include <stdlib.h>

#include "methods/laplace2d/fmm2d.h"

fmmcl_status fmmcl_m2l2d_tile_list(int levels, size_t tb, const size_t *v_begin, cl_uint **list, size_t *n) {
  *list = NULL, *n = 0;
  if (tb < 1 || levels < 2 || levels > FMMCL_QUADTREE2D_MAX_LEVELS) return FMMCL_ERROR_INVALID_ARGUMENT;
  const size_t total = fmmcl_m2l2d_tile_groups(levels, tb);
  cl_uint *out = malloc((total + 1) * sizeof *out);
  unsigned char *used = malloc(total + 1);
  if (!out || !used) {
    free(out), free(used);
    return FMMCL_ERROR_OUT_OF_MEMORY;
  }
  size_t first = 0, k = 0; /* first: the level's first tile in used[] */
  for (int l = 2; l <= levels; l++) {
    const size_t d = (size_t)1 << l, side = d > tb ? d / tb : 1, off = fmmcl_quadtree2d_level_offset(l);
    for (size_t i = 0; i < side * side; i++) used[first + i] = v_begin == NULL;
    for (size_t m = 0; v_begin && m < d * d; m++)
      if (v_begin[off + m + 1] > v_begin[off + m]) {
        size_t x, y;
        fmmcl_quadtree2d_cell_xy(m, &x, &y);
        used[first + (y / tb) * side + x / tb] = 1;
      }
    for (size_t i = 0; i < side * side; i++)
      if (used[first + i]) out[k++] = (cl_uint)((unsigned)l << FMMCL_M2L2D_TILE_LEVEL_SHIFT | i);
    first += side * side;
  }
  free(used);
  *list = out, *n = k;
  return FMMCL_SUCCESS;
}
