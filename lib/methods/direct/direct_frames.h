/* direct_frames.h — the local coordinate frames of the direct method: points
 * in Morton order, cut into groups of consecutive points, each group with a
 * centre on a power-of-two grid so that centre differences are exact in float. */
#ifndef FMMCL_DIRECT_FRAMES_H
#define FMMCL_DIRECT_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"

/* The grid every group centre lies on: integer multiples of step, a power
 * of two about 2^-20 of the box of all points; origin, the grid point
 * nearest the box's centre, is what the kernels' centres are relative to,
 * so a centre relative to origin is exact in float and so is the
 * difference of two centres. */
typedef struct direct_grid {
  double origin[FMMCL_MAX_DIM];
  double step;
  double half; /* largest half-side of the box */
} direct_grid;

/* The grid of sources and targets together (targets may be NULL). */
void fmmcl_direct_grid(size_t ns, const double *src, size_t nt, const double *tgt, int dim,
                       direct_grid *grid);

/* xs[i] = x[perm[i]]: the points in sorted order (perm NULL: the caller's),
 * in world coordinates (an offset taken now would round away the digits of
 * close pairs), so the passes after it read memory in order. */
void fmmcl_direct_gather(size_t n, const double *x, const size_t *perm, int dim, double *xs);

/* Groups of `group` consecutive points of xs (from fmmcl_direct_gather; the
 * last group shorter), each framed by the centre of its parent, the group of
 * parent * group points it lies in (parent = 1: its own): centre[g * dim + c]
 * in world coordinates, the grid point nearest the parent's coordinate-wise
 * median (near most of its points even when a few lie far off), and
 * radius[g], the largest distance from that centre to a point of the
 * group, rounded up. */
void fmmcl_direct_groups(const direct_grid *grid, size_t n, const double *xs, int dim, size_t group,
                         size_t parent, double *centre, double *radius);

/* The Morton order of n points (dim coordinates each; the first three are
 * used, fewer are padded with zeros) down to cells of 2^-16 of the box:
 * perm[i] is the caller's index of the i-th point in that order, and
 * *sorted_keys (when not NULL; the caller frees it) the keys in that order.
 * Fails only for want of memory. */
fmmcl_status fmmcl_direct_order(fmmcl_context ctx, size_t n, const double *x, int dim, size_t *perm,
                                uint64_t **sorted_keys);

/* Whether two of the sorted points xs (from fmmcl_direct_gather) coincide:
 * equal points have equal keys, so only runs of equal sorted_keys are
 * compared, in O(n) for any set that is not crowded into a few cells (a
 * run of more than 64 is sorted). */
int fmmcl_direct_repeats(size_t n, const double *xs, const uint64_t *keys, int dim);

#endif /* FMMCL_DIRECT_FRAMES_H */
