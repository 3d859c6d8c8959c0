/* closest_pairs.h — the targets whose nearest source is closest, found on
 * a hashed grid in linear time (closest_pairs.c). */
#ifndef FMMCL_CLOSEST_PAIRS_H
#define FMMCL_CLOSEST_PAIRS_H
#include <stddef.h>

/* One close pair: a target, its nearest distinct source and their distance. */
typedef struct fmmcl_close_pair {
  size_t target, source;
  double distance;
} fmmcl_close_pair;

/* The (at most k) targets whose nearest distinct, non-coincident source is
 * closest, closest first, into out[k]; returns how many (0 for dim outside
 * 1..3 and when memory is lacking). tgt NULL: the targets are the sources
 * (m is then n) and a point is not its own neighbour. Neighbours are looked
 * for on a grid of about two sources per cell: a target with none in its
 * cell's neighbourhood is not close and is left out. */
size_t fmmcl_close_pairs(int dim, size_t n, const double *src, size_t m, const double *tgt, size_t k,
                         fmmcl_close_pair *out);
#endif
