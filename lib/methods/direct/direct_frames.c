/* direct_frames.c — Morton order, groups and grid centres of the direct
 * method's local coordinate frames (see direct_frames.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "methods/direct/direct_frames.h"
#include "tree/morton3d.h"

/* Centre bits below the box: 2^20 steps per half-side keep a centre within
 * 2^-21 of the box of its group, and any centre (|k| <= 2^20 + 1 steps) and
 * any difference of two exact in float's 24 bits. */
#define GRID_BITS 20
/* Morton levels the order resolves. */
#define ORDER_LEVELS 16

void fmmcl_direct_grid(size_t ns, const double *src, size_t nt, const double *tgt, int dim,
                       direct_grid *grid) {
  double half = 0;
  for (int c = 0; c < dim; c++) {
    double lo = src[c], hi = src[c];
    for (size_t i = 0; i < ns; i++) {
      const double v = src[i * dim + c];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    for (size_t i = 0; tgt && i < nt; i++) {
      const double v = tgt[i * dim + c];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    grid->origin[c] = 0.5 * lo + 0.5 * hi;
    half = 0.5 * hi - 0.5 * lo > half ? 0.5 * hi - 0.5 * lo : half;
  }
  int e = 0;
  frexp(half, &e); /* half < 2^e; e = 0 for coincident points */
  grid->step = ldexp(1.0, e - GRID_BITS);
  grid->half = half;
  /* on the grid itself, so every centre is a double and a point's offset
   * from it is exact as a double-double */
  for (int c = 0; c < dim; c++) grid->origin[c] = nearbyint(grid->origin[c] / grid->step) * grid->step;
}

void fmmcl_direct_gather(size_t n, const double *x, const size_t *perm, int dim, double *xs) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < dim; c++) xs[i * dim + c] = x[(perm ? perm[i] : i) * dim + c];
}

/* The k-th smallest of a[0 .. n) (Hoare's selection, a reordered): linear
 * on average, so the groups' medians cost about as much as their boxes. */
static double select_kth(double *a, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const double pivot = a[lo + (hi - lo) / 2];
    size_t i = lo, j = hi;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        const double t = a[i];
        a[i] = a[j], a[j] = t;
        i++;
        if (j == 0) break;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return a[k];
  }
  return a[k];
}

/* The median of coordinate c of points lo .. hi of xs (scratch holds hi -
 * lo doubles): a centre near most of the group's points even where a few
 * lie far away, whose offsets then keep the digits of the close pairs. */
static double median_coordinate(const double *xs, size_t lo, size_t hi, int dim, int c, double *scratch) {
  const size_t n = hi - lo;
  for (size_t i = 0; i < n; i++) scratch[i] = xs[(lo + i) * dim + c];
  return select_kth(scratch, n, n / 2);
}

void fmmcl_direct_groups(const direct_grid *grid, size_t n, const double *xs, int dim, size_t group,
                         size_t parent, double *centre, double *radius) {
  const size_t groups = (n + group - 1) / group;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t g = 0; g < groups; g++) {
    const size_t lo = g * group, hi = lo + group < n ? lo + group : n;
    const size_t plo = g / parent * parent * group, phi = plo + parent * group < n ? plo + parent * group : n;
    double *cg = centre + g * (size_t)dim;
    double *scratch = malloc((phi - plo) * sizeof *scratch);
    for (int c = 0; c < dim; c++) {
      double a = INFINITY, b = -INFINITY;
      for (size_t i = plo; i < phi; i++) {
        const double v = xs[i * dim + c];
        a = v < a ? v : a;
        b = v > b ? v : b;
      }
      /* without memory for the median, the middle of the group's box */
      const double m = scratch ? median_coordinate(xs, plo, phi, dim, c, scratch) : 0.5 * a + 0.5 * b;
      cg[c] = nearbyint(m / grid->step) * grid->step;
    }
    free(scratch);
    double r2 = 0;
    for (size_t i = lo; i < hi; i++) {
      double d2 = 0;
      for (int c = 0; c < dim; c++) {
        const double d = xs[i * dim + c] - cg[c];
        d2 += d * d;
      }
      r2 = d2 > r2 ? d2 : r2;
    }
    /* rounded up, so the kernel's test of near groups errs towards near */
    radius[g] = sqrt(r2) * (1 + 0x1p-20) + grid->step;
  }
}

fmmcl_status fmmcl_direct_order(fmmcl_context ctx, size_t n, const double *x, int dim, size_t *perm,
                                uint64_t **sorted_keys) {
  double *xyz = NULL;
  const double *p = x;
  if (dim != 3) {
    xyz = calloc(3 * n, sizeof *xyz);
    if (!xyz) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu points", n);
    const int used = dim < 3 ? dim : 3;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++)
      for (int c = 0; c < used; c++) xyz[3 * i + c] = x[i * dim + c];
    p = xyz;
  }
  uint64_t *keys = malloc(n * sizeof *keys);
  fmmcl_morton3d_cube cube;
  fmmcl_status st = keys ? fmmcl_morton3d_bounding_cube(p, n, NULL, 0, &cube)
                         : fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu points", n);
  if (!st) {
    fmmcl_morton3d_keys(&cube, p, n, keys);
    /* tiles need no finer order than cells of 2^-16 of the box (clusters
     * 1e-4 wide still span many), and 48 bits sort in 6 passes, not 8 */
    for (size_t i = 0; i < n; i++) keys[i] >>= 3 * (FMMCL_MORTON_LEVELS - ORDER_LEVELS);
    st = fmmcl_morton3d_sort(keys, perm, n);
    if (st) st = fmmcl_fail(ctx, st, "out of host memory sorting %zu points", n);
  }
  if (!st && sorted_keys) *sorted_keys = keys;
  else free(keys);
  free(xyz);
  return st;
}

/* Longest run of equal keys compared pair by pair; a longer one (a cell of
 * 2^-16 of the box holding more points, as a set far wider than its bulk
 * has) is sorted and its neighbours compared. */
#define REPEAT_RUN_MAX 64

/* Records of dim + 1 doubles, the first the dimension (qsort passes no
 * context, and a static one would not be thread-safe). */
static int compare_points(const void *a, const void *b) {
  const double *x = a, *y = b;
  for (int c = 1; c <= (int)x[0]; c++)
    if (x[c] != y[c]) return x[c] < y[c] ? -1 : 1;
  return 0;
}

/* Whether two of the run's points coincide; unknown (no memory) is yes. */
static int run_repeats(size_t n, const double *xs, int dim) {
  const size_t w = (size_t)dim + 1;
  double *p = malloc(n * w * sizeof *p);
  if (!p) return 1;
  for (size_t i = 0; i < n; i++) {
    p[i * w] = dim;
    memcpy(p + i * w + 1, xs + i * dim, (size_t)dim * sizeof *p);
  }
  qsort(p, n, w * sizeof *p, compare_points);
  int found = 0;
  for (size_t i = 1; i < n && !found; i++) found = compare_points(p + (i - 1) * w, p + i * w) == 0;
  free(p);
  return found;
}

int fmmcl_direct_repeats(size_t n, const double *xs, const uint64_t *keys, int dim) {
  for (size_t a = 0, b; a < n; a = b) {
    for (b = a + 1; b < n && keys[b] == keys[a]; b++) {}
    if (b - a > REPEAT_RUN_MAX) {
      if (run_repeats(b - a, xs + a * dim, dim)) return 1;
      continue;
    }
    for (size_t i = a; i < b; i++)
      for (size_t j = i + 1; j < b; j++) {
        int same = 1;
        for (int c = 0; c < dim && same; c++) same = xs[i * dim + c] == xs[j * dim + c];
        if (same) return 1;
      }
  }
  return 0;
}
