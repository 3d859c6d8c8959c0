/* check_targets.c — which targets --check compares: those whose nearest
 * source is closest (where rounding of coordinates hurts most) and random
 * ones, so that a sample sees the worst targets and not only typical ones. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_targets.h"

typedef struct keyed {
  uint64_t key;
  size_t idx;
} keyed;

typedef struct ranked {
  double dist;
  size_t idx;
} ranked;

static int by_key(const void *a, const void *b) {
  uint64_t x = ((const keyed *)a)->key, y = ((const keyed *)b)->key;
  return x < y ? -1 : x > y;
}

static int by_dist(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->dist != y->dist) return x->dist < y->dist ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int by_index(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

/* 21 bits per coordinate: cells of a grid of at most 2^21 per side. */
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

size_t fmmcl_cli_closest_targets(const double *src, size_t n, const double *tgt, size_t m, int dim, int same,
                                 size_t k, size_t *out, double *dist) {
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
  double per_side = fmin(ceil(pow((double)n / 2.0, 1.0 / dim)), (double)(1 << 20));
  double h = side > 0 ? side / per_side : 1.0;
  keyed *cells = malloc(n * sizeof *cells);
  ranked *r = malloc(m * sizeof *r);
  if (!cells || !r) {
    free(cells);
    free(r);
    return 0;
  }
  for (size_t j = 0; j < n; j++) {
    int64_t c[3];
    for (int d = 0; d < dim; d++) c[d] = (int64_t)floor((src[j * dim + d] - lo[d]) / h) + 1;
    cells[j].key = cell_key(c, dim);
    cells[j].idx = j;
  }
  qsort(cells, n, sizeof *cells, by_key);
  int neighbours = dim == 1 ? 3 : dim == 2 ? 9 : 27;
#pragma omp parallel for schedule(dynamic, 1024)
  for (size_t i = 0; i < m; i++) {
    const double *x = tgt + i * dim;
    int64_t c[3], nb[3];
    for (int d = 0; d < dim; d++) c[d] = (int64_t)floor((x[d] - lo[d]) / h) + 1;
    double best = INFINITY;
    for (int t = 0; t < neighbours; t++) {
      int code = t;
      for (int d = 0; d < dim; d++, code /= 3) nb[d] = c[d] + code % 3 - 1;
      uint64_t key = cell_key(nb, dim);
      for (size_t e = lower_bound(cells, n, key); e < n && cells[e].key == key; e++) {
        size_t j = cells[e].idx;
        if (same && j == i) continue;
        double r2 = 0;
        for (int d = 0; d < dim; d++) r2 += (x[d] - src[j * dim + d]) * (x[d] - src[j * dim + d]);
        /* a source on the target contributes nothing anywhere: not a close pair */
        if (r2 > 0 && r2 < best) best = r2;
      }
    }
    r[i].dist = sqrt(best);
    r[i].idx = i;
  }
  qsort(r, m, sizeof *r, by_dist);
  size_t found = 0;
  for (size_t i = 0; i < m && found < k && isfinite(r[i].dist); i++) {
    out[found] = r[i].idx;
    if (dist) dist[found] = r[i].dist;
    found++;
  }
  free(cells);
  free(r);
  return found;
}

size_t fmmcl_cli_check_targets(const double *src, size_t n, const double *tgt, size_t m, int dim, int same,
                               size_t k, const size_t *random_sorted, size_t n_random, size_t *out,
                               size_t *n_close, double *closest) {
  size_t want = k / 2 > 0 ? k / 2 : 1;
  double *dist = malloc(want * sizeof *dist);
  size_t close = dist ? fmmcl_cli_closest_targets(src, n, tgt, m, dim, same, want, out, dist) : 0;
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
