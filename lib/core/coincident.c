/* coincident.c — finds whether two distinct points share coordinates
 * exactly (a singular pair of the 1/r kernel), by hashing in O(N + M). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static uint64_t point_hash(const double *x, int dim) {
  uint64_t h = FMMCL_HASH64_INIT;
  for (int c = 0; c < dim; c++) {
    double v = x[c] == 0 ? 0.0 : x[c]; /* -0.0 and 0.0 are the same place */
    h = fmmcl_hash64(h, &v, sizeof v);
  }
  return h;
}

static int same_point(const double *a, const double *b, int dim) {
  for (int c = 0; c < dim; c++)
    if (a[c] != b[c]) return 0;
  return 1;
}

int fmmcl_has_coincident(size_t ns, const double *src, size_t nt, const double *tgt, int dim,
                         int targets_are_sources) {
  size_t cap = 16;
  while (cap < 2 * ns) cap *= 2;
  size_t *slot = malloc(cap * sizeof *slot);
  if (!slot) return 1; /* unknown: the caller takes the safe path */
  memset(slot, 0xff, cap * sizeof *slot);
  const size_t empty = (size_t)-1;
  int found = 0;
  for (size_t j = 0; j < ns && !found; j++) {
    size_t h = (size_t)point_hash(src + j * dim, dim) & (cap - 1);
    while (slot[h] != empty) {
      /* with targets == sources a repeated source is itself the finding */
      if (targets_are_sources && same_point(src + slot[h] * dim, src + j * dim, dim)) {
        found = 1;
        break;
      }
      h = (h + 1) & (cap - 1);
    }
    slot[h] = j;
  }
  if (!targets_are_sources)
    for (size_t i = 0; i < nt && !found; i++)
      for (size_t h = (size_t)point_hash(tgt + i * dim, dim) & (cap - 1); slot[h] != empty;
           h = (h + 1) & (cap - 1))
        if (same_point(src + slot[h] * dim, tgt + i * dim, dim)) {
          found = 1;
          break;
        }
  free(slot);
  return found;
}
