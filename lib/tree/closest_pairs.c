/* closest_pairs.c — the targets whose nearest source is closest: where the
 * rounding of coordinates hurts a singular kernel most. Sources go into the
 * cells of a uniform grid, sorted by cell key; each target scans its cell
 * and the neighbouring ones. */
#include "tree/closest_pairs.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "fmmcl.h"

typedef struct keyed {
  uint64_t key;
  size_t idx;
} keyed;

static int by_key(const void *a, const void *b) {
  uint64_t x = ((const keyed *)a)->key, y = ((const keyed *)b)->key;
  return x < y ? -1 : x > y;
}

static int by_distance(const void *a, const void *b) {
  const fmmcl_close_pair *x = a, *y = b;
  if (x->distance != y->distance) return x->distance < y->distance ? -1 : 1;
  return x->target < y->target ? -1 : x->target > y->target;
}

/* 21 bits per coordinate: cells of a grid of at most 2^20 per side (plus
 * the guard cells on either side). */
static uint64_t cell_key(const int64_t *c, int dim) {
  uint64_t k = 0;
  for (int d = 0; d < dim; d++) k = (k << 21) | (uint64_t)(c[d] & 0x1fffff);
  return k;
}

/* First entry of sorted[0..n) with key >= key. */
static size_t lower_bound(const keyed *sorted, size_t n, uint64_t key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (sorted[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

size_t fmmcl_close_pairs(int dim, size_t n, const double *src, size_t m, const double *tgt, size_t k,
                         fmmcl_close_pair *out) {
  const int same = tgt == NULL;
  if (same) tgt = src, m = n;
  if (dim < 1 || dim > 3 || n == 0 || m == 0 || k == 0) return 0;
  double lo[3], hi[3], side = 0;
  for (int d = 0; d < dim; d++) lo[d] = INFINITY, hi[d] = -INFINITY;
  for (size_t j = 0; j < n; j++)
    for (int d = 0; d < dim; d++) {
      lo[d] = fmin(lo[d], src[j * dim + d]);
      hi[d] = fmax(hi[d], src[j * dim + d]);
    }
  for (int d = 0; d < dim; d++) side = fmax(side, hi[d] - lo[d]);
  /* about two sources per cell of a uniform set; a clustered set only
   * makes its close pairs closer, and they are what is looked for */
  const double per_side = fmin(ceil(pow((double)n / 2.0, 1.0 / dim)), (double)(1 << 20));
  const double h = side > 0 ? side / per_side : 1.0;
  keyed *cells = malloc(n * sizeof *cells);
  fmmcl_close_pair *r = malloc(m * sizeof *r);
  if (!cells || !r) {
    free(cells);
    free(r);
    return 0;
  }
  /* a target outside the sources' box lands in a clamped cell: any cell it
   * meets is a true neighbourhood of that clamped position, never a wrong
   * answer, only a missed far pair that is not close anyway */
  for (size_t j = 0; j < n; j++) {
    int64_t c[3];
    for (int d = 0; d < dim; d++) c[d] = (int64_t)floor((src[j * dim + d] - lo[d]) / h) + 1;
    cells[j].key = cell_key(c, dim);
    cells[j].idx = j;
  }
  qsort(cells, n, sizeof *cells, by_key);
  const int neighbours = dim == 1 ? 3 : dim == 2 ? 9 : 27;
#pragma omp parallel for schedule(dynamic, 1024)
  for (size_t i = 0; i < m; i++) {
    const double *x = tgt + i * dim;
    int64_t c[3], nb[3];
    for (int d = 0; d < dim; d++) {
      const double f = floor((x[d] - lo[d]) / h) + 1;
      c[d] = (int64_t)fmin(fmax(f, -1.0), (double)(1 << 20) + 2);
    }
    double best = INFINITY;
    size_t best_j = 0;
    for (int t = 0; t < neighbours; t++) {
      int code = t;
      for (int d = 0; d < dim; d++, code /= 3) nb[d] = c[d] + code % 3 - 1;
      const uint64_t key = cell_key(nb, dim);
      for (size_t e = lower_bound(cells, n, key); e < n && cells[e].key == key; e++) {
        const size_t j = cells[e].idx;
        if (same && j == i) continue;
        double r2 = 0;
        for (int d = 0; d < dim; d++) r2 += (x[d] - src[j * dim + d]) * (x[d] - src[j * dim + d]);
        /* a source on the target contributes nothing anywhere: not a close pair */
        if (r2 > 0 && r2 < best) best = r2, best_j = j;
      }
    }
    r[i] = (fmmcl_close_pair){i, best_j, sqrt(best)};
  }
  qsort(r, m, sizeof *r, by_distance);
  size_t found = 0;
  for (size_t i = 0; i < m && found < k && isfinite(r[i].distance); i++) out[found++] = r[i];
  free(cells);
  free(r);
  return found;
}

fmmcl_status fmmcl_closest_targets(int dim, size_t n_sources, const double *sources, size_t n_targets,
                                   const double *targets, size_t k, size_t *out, double *dist,
                                   size_t *found) {
  if (!found || (k && !out) || (n_sources && !sources)) return FMMCL_ERROR_NULL_POINTER;
  *found = 0;
  if (dim < 1 || dim > 3) return FMMCL_ERROR_INVALID_ARGUMENT;
  if (k == 0 || n_sources == 0) return FMMCL_SUCCESS;
  fmmcl_close_pair *p = malloc(k * sizeof *p);
  if (!p) return FMMCL_ERROR_OUT_OF_MEMORY;
  const size_t got = fmmcl_close_pairs(dim, n_sources, sources, n_targets, targets, k, p);
  for (size_t i = 0; i < got; i++) {
    out[i] = p[i].target;
    if (dist) dist[i] = p[i].distance;
  }
  free(p);
  *found = got;
  return FMMCL_SUCCESS;
}
