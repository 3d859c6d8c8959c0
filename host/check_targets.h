/* check_targets.h — the targets --check compares (check_targets.c). */
#ifndef FMMCL_CHECK_TARGETS_H
#define FMMCL_CHECK_TARGETS_H

#include <stddef.h>

/* The (at most k) targets whose nearest distinct source is closest, closest
 * first, into out (and their distances into dist when not NULL); same: the
 * targets are the sources (a point is not its own neighbour). Neighbours
 * are looked for on a grid of about two sources per cell: a target with
 * none in its cell's neighbourhood is not close and is left out. dim 1..3
 * (0 otherwise, and when memory is lacking). */
size_t fmmcl_cli_closest_targets(const double *src, size_t n, const double *tgt, size_t m, int dim, int same,
                                 size_t k, size_t *out, double *dist);

/* k targets for --check into out: up to k/2 of the closest ones (*n_close
 * of them, first), then the random ones of random_sorted (ascending) that
 * are not among those. *closest is the closest pair's distance (NAN where
 * none was found). Returns how many were chosen. */
size_t fmmcl_cli_check_targets(const double *src, size_t n, const double *tgt, size_t m, int dim, int same,
                               size_t k, const size_t *random_sorted, size_t n_random, size_t *out,
                               size_t *n_close, double *closest);

#endif /* FMMCL_CHECK_TARGETS_H */
