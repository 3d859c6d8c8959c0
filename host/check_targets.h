/* check_targets.h — the targets --check compares (check_targets.c). */
#ifndef FMMCL_CHECK_TARGETS_H
#define FMMCL_CHECK_TARGETS_H

#include <stddef.h>

/* k targets for --check into out: up to k/2 of the closest ones (*n_close
 * of them, first), then the random ones of random_sorted (ascending) that
 * are not among those. *closest is the closest pair's distance (NAN where
 * none was found). Returns how many were chosen. */
size_t fmmcl_cli_check_targets(const double *src, size_t n, const double *tgt, size_t m, int dim, int same,
                               size_t k, const size_t *random_sorted, size_t n_random, size_t *out,
                               size_t *n_close, double *closest);

#endif /* FMMCL_CHECK_TARGETS_H */
