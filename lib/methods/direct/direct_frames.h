/* direct_frames.h — the local coordinate frames of the direct method: points
 * in Morton order, cut into groups of consecutive points, each group with a
 * centre on a power-of-two grid so that centre differences are exact in float. */
#ifndef FMMCL_DIRECT_FRAMES_H
#define FMMCL_DIRECT_FRAMES_H

#include <stddef.h>

#include "core/internal.h"

/* The grid every group centre lies on: origin (the centre of the box of all
 * points, in world coordinates) plus integer multiples of step, a power of
 * two about 2^-20 of the box, so a centre relative to origin is exact in
 * float and so is the difference of two centres. */
typedef struct direct_grid {
  double origin[FMMCL_MAX_DIM];
  double step;
  double half; /* largest half-side of the box */
} direct_grid;

/* The grid of sources and targets together (targets may be NULL). */
void fmmcl_direct_grid(size_t ns, const double *src, size_t nt, const double *tgt, int dim,
                       direct_grid *grid);

/* Groups of `group` consecutive points of x[perm[i]] (the last one shorter):
 * centre[g * dim + c] relative to grid->origin, on the grid, and radius[g],
 * the largest distance from that centre to a point of the group, rounded
 * up. perm may be NULL (the identity). */
void fmmcl_direct_groups(const direct_grid *grid, size_t n, const double *x, const size_t *perm, int dim,
                         size_t group, double *centre, double *radius);

/* The Morton order of n points (dim coordinates each; the first three are
 * used, fewer are padded with zeros): perm[i] is the caller's index of the
 * i-th point in that order. Fails only for want of memory. */
fmmcl_status fmmcl_direct_order(fmmcl_context ctx, size_t n, const double *x, int dim, size_t *perm);

#endif /* FMMCL_DIRECT_FRAMES_H */
