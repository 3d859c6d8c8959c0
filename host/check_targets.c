/* check_targets.c — which targets --check compares: those whose nearest
 * source is closest (where rounding of coordinates hurts most) and random
 * ones, so that a sample sees the worst targets and not only typical ones. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_targets.h"
#include "fmmcl.h"

static int by_index(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

size_t fmmcl_cli_check_targets(const double *src, size_t n, const double *tgt, size_t m, int dim, int same,
                               size_t k, const size_t *random_sorted, size_t n_random, size_t *out,
                               size_t *n_close, double *closest) {
  size_t want = k / 2 > 0 ? k / 2 : 1;
  double *dist = malloc(want * sizeof *dist);
  size_t close = 0;
  if (!dist ||
      fmmcl_closest_targets(dim, n, src, m, same ? NULL : tgt, want, out, dist, &close) != FMMCL_SUCCESS)
    close = 0;
  if (close > k) close = k;
  if (closest) *closest = close ? dist[0] : NAN; /* they come closest first */
  free(dist);
  size_t *sorted_close = malloc((close + 1) * sizeof *sorted_close);
  if (!sorted_close) close = 0;
  else {
    memcpy(sorted_close, out, close * sizeof *out);
    qsort(sorted_close, close, sizeof *sorted_close, by_index);
  }
  size_t total = close;
  for (size_t i = 0; i < n_random && total < k; i++) {
    size_t v = random_sorted[i];
    if (close && bsearch(&v, sorted_close, close, sizeof v, by_index)) continue;
    out[total++] = v;
  }
  free(sorted_close);
  *n_close = close;
  return total;
}
