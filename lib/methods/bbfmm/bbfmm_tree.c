/* bbfmm_tree.c — the black-box FMM's uniform octree: a power-of-two root
 * cube over sources and targets, points sorted by leaf (counting sort). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"

static void bounds(size_t n, const double *x, double *lo, double *hi) {
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++) {
      if (x[3 * i + c] < lo[c]) lo[c] = x[3 * i + c];
      if (x[3 * i + c] > hi[c]) hi[c] = x[3 * i + c];
    }
}

static size_t leaf_of(const fmmcl_bbfmm_tree *t, const double *p) {
  size_t g = (size_t)1 << t->depth, idx[3];
  for (int c = 0; c < 3; c++) {
    double u = (p[c] - (t->center[c] - t->half)) / (2 * t->half) * (double)g;
    long v = (long)floor(u);
    idx[c] = v < 0 ? 0 : (size_t)v >= g ? g - 1 : (size_t)v;
  }
  return (idx[0] * g + idx[1]) * g + idx[2];
}

/* Counting sort of n points by leaf: start[nleaf + 1], perm, sorted copy. */
static int sort_points(const fmmcl_bbfmm_tree *t, size_t n, const double *x, uint32_t **start, size_t **perm,
                       double **sorted) {
  size_t nleaf = (size_t)1 << (3 * t->depth);
  uint32_t *s = calloc(nleaf + 1, sizeof *s);
  size_t *leaf = malloc(n * sizeof *leaf), *p = malloc(n * sizeof *p);
  double *y = malloc(3 * n * sizeof *y);
  if (!s || !leaf || !p || !y) {
    free(s), free(leaf), free(p), free(y);
    return -1;
  }
  for (size_t i = 0; i < n; i++) s[(leaf[i] = leaf_of(t, x + 3 * i)) + 1]++;
  for (size_t l = 0; l < nleaf; l++) s[l + 1] += s[l];
  uint32_t *fill = malloc(nleaf * sizeof *fill);
  if (!fill) {
    free(s), free(leaf), free(p), free(y);
    return -1;
  }
  memcpy(fill, s, nleaf * sizeof *fill);
  for (size_t i = 0; i < n; i++) {
    size_t j = fill[leaf[i]]++;
    p[j] = i;
    memcpy(y + 3 * j, x + 3 * i, 3 * sizeof *y);
  }
  free(fill), free(leaf);
  *start = s, *perm = p, *sorted = y;
  return 0;
}

fmmcl_status fmmcl_bbfmm_tree_build(size_t ns, const double *src, size_t nt, const double *tgt, int depth,
                                    int leaf_size, fmmcl_bbfmm_tree *t) {
  memset(t, 0, sizeof *t);
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  bounds(ns, src, lo, hi);
  bounds(nt, tgt, lo, hi);
  double ext = 0;
  for (int c = 0; c < 3; c++) {
    t->center[c] = 0.5 * (lo[c] + hi[c]);
    if (hi[c] - lo[c] > ext) ext = hi[c] - lo[c];
  }
  /* half width: the next power of two above half the extent (a little
   * margin so no point sits on the far face) */
  /* one point, or all in one place: any box will do, and a box of the
   * scale of the coordinates keeps the M2L matrices finite */
  double scale = fmax(1.0, fmax(fabs(t->center[0]), fmax(fabs(t->center[1]), fabs(t->center[2]))));
  if (ext < 1e-12 * scale) ext = scale;
  t->half = ldexp(1.0, (int)ceil(log2(ext * 0.5 * (1 + 1e-9))));
  if (depth <= 0) {
    double q = leaf_size > 0 ? leaf_size : 64;
    size_t n = ns > nt ? ns : nt;
    depth = (int)lround(log((double)n / q) / log(8.0));
  }
  t->depth = depth < 2 ? 2 : depth > 8 ? 8 : depth; /* 8: 16.8M leaves */
  t->ns = ns, t->nt = nt;
  if (sort_points(t, ns, src, &t->src_start, &t->src_perm, &t->src) ||
      sort_points(t, nt, tgt, &t->tgt_start, &t->tgt_perm, &t->tgt)) {
    fmmcl_bbfmm_tree_free(t);
    return FMMCL_ERROR_OUT_OF_MEMORY;
  }
  return FMMCL_SUCCESS;
}

void fmmcl_bbfmm_tree_free(fmmcl_bbfmm_tree *t) {
  free(t->src), free(t->tgt), free(t->src_perm), free(t->tgt_perm), free(t->src_start), free(t->tgt_start);
  memset(t, 0, sizeof *t);
}

unsigned char *fmmcl_bbfmm_points_real4(const double *c, const double *x, size_t n, size_t rs,
                                        const double *frame, const uint32_t *start, size_t nleaf) {
  unsigned char *out = calloc(n ? n : 1, 4 * rs);
  if (!out) return NULL;
  if (!frame) {
    for (size_t i = 0; i < n; i++)
      for (int d = 0; d < 3; d++) fmmcl_put_real(out, rs, 4 * i + d, x[3 * i + d] - c[d]);
    return out;
  }
  /* x - (c + f) in double, rounded once: the offset within the leaf keeps
   * every digit single precision has */
  for (size_t k = 0; k < nleaf; k++)
    for (size_t i = start[k]; i < start[k + 1]; i++)
      for (int d = 0; d < 3; d++)
        fmmcl_put_real(out, rs, 4 * i + d, (x[3 * i + d] - c[d]) - frame[3 * k + d]);
  return out;
}

void fmmcl_bbfmm_leaf_frame(const fmmcl_bbfmm_tree *t, size_t leaf, double f[3]) {
  const size_t g = (size_t)1 << t->depth;
  const size_t i[3] = {leaf / (g * g), leaf / g % g, leaf % g};
  const double h = t->half / (double)g;
  for (int d = 0; d < 3; d++) f[d] = (double)(2 * (long)i[d] + 1 - (long)g) * h;
}
