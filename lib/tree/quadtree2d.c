/* quadtree2d.c — builds the uniform quadtree: bounding square, counting sort
 * of points by leaf, V lists on levels 2..L and U lists of the leaves (both
 * between occupied cells only), and the leaf level a cost model prefers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "tree/quadtree2d.h"

size_t fmmcl_quadtree2d_level_offset(int level) { return (((size_t)1 << (2 * level)) - 1) / 3; }

size_t fmmcl_quadtree2d_cell_sources(const fmmcl_quadtree2d *t, int level, size_t m) {
  const size_t span = (size_t)1 << (2 * (t->levels - level));
  return t->leaf_src[(m + 1) * span] - t->leaf_src[m * span];
}

size_t fmmcl_quadtree2d_cell_targets(const fmmcl_quadtree2d *t, int level, size_t m) {
  const size_t span = (size_t)1 << (2 * (t->levels - level));
  return t->leaf_tgt[(m + 1) * span] - t->leaf_tgt[m * span];
}

double fmmcl_quadtree2d_cell_side(const fmmcl_quadtree2d *t, int level) {
  return t->side / (double)((size_t)1 << level);
}

static size_t spread_bits(size_t v) {
  size_t r = 0;
  for (int b = 0; b < 32; b++) r |= ((v >> b) & 1u) << (2 * b);
  return r;
}
static size_t morton(size_t ix, size_t iy) { return spread_bits(ix) | spread_bits(iy) << 1; }
static size_t compact_bits(size_t m) {
  size_t r = 0;
  for (int b = 0; b < 32; b++) r |= ((m >> (2 * b)) & 1u) << b;
  return r;
}

void fmmcl_quadtree2d_cell_xy(size_t m, size_t *x, size_t *y) {
  *x = compact_bits(m), *y = compact_bits(m >> 1);
}

void fmmcl_quadtree2d_cell_centre(const fmmcl_quadtree2d *t, int level, size_t m, double *c) {
  const double h = fmmcl_quadtree2d_cell_side(t, level);
  c[0] = -0.5 * t->side + ((double)compact_bits(m) + 0.5) * h;
  c[1] = -0.5 * t->side + ((double)compact_bits(m >> 1) + 0.5) * h;
}

int fmmcl_quadtree2d_levels_for(size_t n, size_t q) {
  int L = 2;
  if (q == 0) q = 1;
  while (L < FMMCL_QUADTREE2D_MAX_LEVELS && (double)n > (double)q * (double)((size_t)1 << (2 * L))) L++;
  return L;
}

void fmmcl_quadtree2d_free(fmmcl_quadtree2d *t) {
  if (!t) return;
  free(t->source_perm), free(t->target_perm), free(t->src), free(t->tgt);
  free(t->leaf_src), free(t->leaf_tgt), free(t->v_begin), free(t->v_src);
  free(t->u_begin), free(t->u_leaf);
  free(t);
}

/* The side rounded up to FMMCL_QUADTREE2D_SIDE_BITS significant bits. */
static double round_side_up(double side) {
  int e;
  const double m = frexp(side, &e); /* side = m 2^e, 0.5 <= m < 1 */
  return ldexp(ceil(ldexp(m, FMMCL_QUADTREE2D_SIDE_BITS)), e - FMMCL_QUADTREE2D_SIDE_BITS);
}

/* The bounding square of both sets, a hair larger so that the top edge
 * falls inside the last leaf, its side rounded up so that every cell
 * centre is exact in float (see FMMCL_QUADTREE2D_SIDE_BITS). */
static void bounding_square(fmmcl_quadtree2d *t, size_t ns, const double *src, size_t nt, const double *tgt) {
  double lo[2] = {src[0], src[1]}, hi[2] = {src[0], src[1]};
  for (int set = 0; set < 2; set++) {
    const double *x = set ? tgt : src;
    size_t n = set ? nt : ns;
    for (size_t i = 0; i < n; i++)
      for (int c = 0; c < 2; c++) {
        lo[c] = x[2 * i + c] < lo[c] ? x[2 * i + c] : lo[c];
        hi[c] = x[2 * i + c] > hi[c] ? x[2 * i + c] : hi[c];
      }
  }
  double side = hi[0] - lo[0] > hi[1] - lo[1] ? hi[0] - lo[0] : hi[1] - lo[1];
  for (int c = 0; c < 2; c++) t->centre[c] = 0.5 * (lo[c] + hi[c]);
  t->side = side > 0 ? round_side_up(side * (1 + 1e-12)) : 1.0;
}

/* Counting sort of n points into the 4^L leaves: perm, sorted coordinates
 * (relative to the centre) and begin offsets. */
static int sort_points(const fmmcl_quadtree2d *t, size_t n, const double *x, size_t **perm_out,
                       double **sorted_out, size_t **begin_out) {
  const size_t nl = (size_t)1 << (2 * t->levels), dim = (size_t)1 << t->levels;
  const double h = fmmcl_quadtree2d_cell_side(t, t->levels);
  size_t *leaf = malloc(n * sizeof *leaf), *begin = calloc(nl + 1, sizeof *begin);
  size_t *perm = malloc(n * sizeof *perm);
  double *sorted = malloc(2 * n * sizeof *sorted);
  if (!leaf || !begin || !perm || !sorted) {
    free(leaf), free(begin), free(perm), free(sorted);
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    size_t ij[2];
    for (int c = 0; c < 2; c++) {
      double u = (x[2 * i + c] - t->centre[c] + 0.5 * t->side) / h;
      ij[c] = u <= 0 ? 0 : u >= (double)(dim - 1) ? dim - 1 : (size_t)u;
    }
    leaf[i] = morton(ij[0], ij[1]);
    begin[leaf[i] + 1]++;
  }
  for (size_t l = 0; l < nl; l++) begin[l + 1] += begin[l];
  size_t *fill = malloc(nl * sizeof *fill);
  if (!fill) {
    free(leaf), free(begin), free(perm), free(sorted);
    return 0;
  }
  memcpy(fill, begin, nl * sizeof *fill);
  for (size_t i = 0; i < n; i++) {
    size_t k = fill[leaf[i]]++;
    perm[k] = i;
    for (int c = 0; c < 2; c++) sorted[2 * k + c] = x[2 * i + c] - t->centre[c];
  }
  free(fill), free(leaf);
  *perm_out = perm, *sorted_out = sorted, *begin_out = begin;
  return 1;
}

/* V lists: children of the parent's neighbours that are not neighbours
 * themselves (at most 27 per cell), only between a cell with targets and a
 * cell with sources (the rest would add zeros to locals no target reads:
 * on a clustered set most of the uniform tree); two passes, count then fill. */
static int build_v(fmmcl_quadtree2d *t) {
  t->v_begin = calloc(t->n_cells + 1, sizeof *t->v_begin);
  if (!t->v_begin) return 0;
  for (int pass = 0; pass < 2; pass++) {
    size_t n = 0;
    for (int l = 2; l <= t->levels; l++) {
      const long dim = 1L << l;
      const size_t off = fmmcl_quadtree2d_level_offset(l);
      for (size_t m = 0; m < (size_t)dim * (size_t)dim; m++) {
        const long ix = (long)compact_bits(m), iy = (long)compact_bits(m >> 1);
        if (pass) t->v_begin[off + m] = n;
        if (fmmcl_quadtree2d_cell_targets(t, l, m) == 0) continue;
        for (long py = iy / 2 - 1; py <= iy / 2 + 1; py++)
          for (long px = ix / 2 - 1; px <= ix / 2 + 1; px++)
            for (long cy = 2 * py; cy < 2 * py + 2; cy++)
              for (long cx = 2 * px; cx < 2 * px + 2; cx++) {
                if (cx < 0 || cy < 0 || cx >= dim || cy >= dim) continue;
                if (labs(cx - ix) <= 1 && labs(cy - iy) <= 1) continue;
                if (fmmcl_quadtree2d_cell_sources(t, l, morton((size_t)cx, (size_t)cy)) == 0) continue;
                if (pass) t->v_src[n] = off + morton((size_t)cx, (size_t)cy);
                n++;
              }
      }
    }
    if (!pass) {
      t->n_v = n;
      t->v_src = malloc((n ? n : 1) * sizeof *t->v_src);
      if (!t->v_src) return 0;
    }
  }
  /* cells of levels 0..1 have empty lists: their begin is the first entry */
  for (size_t c = 0; c < fmmcl_quadtree2d_level_offset(2); c++) t->v_begin[c] = 0;
  t->v_begin[t->n_cells] = t->n_v;
  return 1;
}

/* U lists: a leaf with targets takes P2P from its 3 x 3 block's leaves that
 * hold sources, itself included. */
static int build_u(fmmcl_quadtree2d *t) {
  const long dim = 1L << t->levels;
  const size_t nl = (size_t)dim * (size_t)dim;
  t->u_begin = malloc((nl + 1) * sizeof *t->u_begin);
  t->u_leaf = malloc(9 * nl * sizeof *t->u_leaf);
  if (!t->u_begin || !t->u_leaf) return 0;
  size_t n = 0;
  for (size_t m = 0; m < nl; m++) {
    const long ix = (long)compact_bits(m), iy = (long)compact_bits(m >> 1);
    t->u_begin[m] = n;
    if (t->leaf_tgt[m + 1] == t->leaf_tgt[m]) continue;
    for (long y = iy - 1; y <= iy + 1; y++)
      for (long x = ix - 1; x <= ix + 1; x++)
        if (x >= 0 && y >= 0 && x < dim && y < dim) {
          const size_t u = morton((size_t)x, (size_t)y);
          if (t->leaf_src[u + 1] > t->leaf_src[u]) t->u_leaf[n++] = u;
        }
  }
  t->u_begin[nl] = n;
  return 1;
}

fmmcl_status fmmcl_quadtree2d_build(size_t ns, const double *src, size_t nt, const double *tgt, int levels,
                                    fmmcl_quadtree2d **out) {
  *out = NULL;
  if (levels < 2 || levels > FMMCL_QUADTREE2D_MAX_LEVELS)
    return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT, "quadtree levels must be in 2..%d, got %d",
                      FMMCL_QUADTREE2D_MAX_LEVELS, levels);
  fmmcl_quadtree2d *t = calloc(1, sizeof *t);
  if (!t) return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (!tgt) tgt = src, nt = ns;
  t->levels = levels;
  t->n_sources = ns, t->n_targets = nt;
  t->n_cells = fmmcl_quadtree2d_level_offset(levels + 1);
  bounding_square(t, ns, src, nt, tgt);
  int ok = sort_points(t, ns, src, &t->source_perm, &t->src, &t->leaf_src) &&
           sort_points(t, nt, tgt, &t->target_perm, &t->tgt, &t->leaf_tgt) && build_v(t) && build_u(t);
  if (!ok) {
    fmmcl_quadtree2d_free(t);
    return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for a %d-level quadtree", levels);
  }
  *out = t;
  return FMMCL_SUCCESS;
}

/* Counts of points per cell of a level (row-major ix + iy * 2^level). */
static void count_points(const fmmcl_quadtree2d *t, size_t n, const double *x, int level, size_t *count) {
  const size_t d = (size_t)1 << level;
  const double h = t->side / (double)d;
  for (size_t i = 0; i < n; i++) {
    size_t ij[2];
    for (int c = 0; c < 2; c++) {
      double u = (x[2 * i + c] - t->centre[c] + 0.5 * t->side) / h;
      ij[c] = u <= 0 ? 0 : u >= (double)(d - 1) ? d - 1 : (size_t)u;
    }
    count[ij[0] + ij[1] * d]++;
  }
}

/* Sum over each cell with targets of (its targets) x (sources of its 3 x 3
 * block): the P2P pairs with that level as the leaves. */
static double near_pairs(const size_t *ns, const size_t *nt, size_t d) {
  double pairs = 0;
  for (size_t iy = 0; iy < d; iy++)
    for (size_t ix = 0; ix < d; ix++) {
      const size_t m = nt[ix + iy * d];
      if (!m) continue;
      size_t s = 0;
      for (size_t y = iy ? iy - 1 : 0; y <= iy + 1 && y < d; y++)
        for (size_t x = ix ? ix - 1 : 0; x <= ix + 1 && x < d; x++) s += ns[x + y * d];
      pairs += (double)m * (double)s;
    }
  return pairs;
}

/* M2L translations of one level between a cell with targets and a cell with
 * sources (the others are skipped: fmm2d_setup.c drops them). */
static double occupied_translations(const size_t *ns, const size_t *nt, size_t d) {
  double n = 0;
  for (size_t iy = 0; iy < d; iy++)
    for (size_t ix = 0; ix < d; ix++) {
      if (!nt[ix + iy * d]) continue;
      const long px = (long)ix / 2, py = (long)iy / 2;
      for (long cy = 2 * (py - 1); cy < 2 * (py + 2); cy++)
        for (long cx = 2 * (px - 1); cx < 2 * (px + 2); cx++) {
          if (cx < 0 || cy < 0 || cx >= (long)d || cy >= (long)d) continue;
          if (labs(cx - (long)ix) <= 1 && labs(cy - (long)iy) <= 1) continue;
          n += ns[(size_t)cx + (size_t)cy * d] > 0;
        }
    }
  return n;
}

int fmmcl_quadtree2d_levels_by_cost(size_t ns, const double *src, size_t nt, const double *tgt, int lmin,
                                    int lmax, double pair_cost, double translation_cost) {
  if (!tgt) tgt = src, nt = ns;
  if (lmax > FMMCL_QUADTREE2D_MAX_LEVELS) lmax = FMMCL_QUADTREE2D_MAX_LEVELS;
  if (lmax <= lmin) return lmin;
  fmmcl_quadtree2d t = {0};
  bounding_square(&t, ns, src, nt, tgt);
  const size_t d = (size_t)1 << lmax;
  size_t *cs = calloc(d * d, sizeof *cs), *ct = calloc(d * d, sizeof *ct);
  if (!cs || !ct) {
    free(cs), free(ct);
    return lmin;
  }
  count_points(&t, ns, src, lmax, cs);
  count_points(&t, nt, tgt, lmax, ct);
  /* per level, from the finest up: near pairs if it were the leaf level,
   * and its own translations (every level down to the leaves has some) */
  double pairs[FMMCL_QUADTREE2D_MAX_LEVELS + 1] = {0}, trans[FMMCL_QUADTREE2D_MAX_LEVELS + 1] = {0};
  for (int l = lmax; l >= lmin; l--) {
    const size_t dl = (size_t)1 << l;
    if (l < lmax) /* fold the finer counts in place: cell (x, y) <- its 4 children */
      for (size_t iy = 0; iy < dl; iy++)
        for (size_t ix = 0; ix < dl; ix++) {
          size_t a = 0, b = 0;
          for (size_t c = 0; c < 4; c++) {
            const size_t k = (2 * ix + (c & 1)) + (2 * iy + (c >> 1)) * (2 * dl);
            a += cs[k], b += ct[k];
          }
          cs[ix + iy * dl] = a, ct[ix + iy * dl] = b; /* index below every child read later */
        }
    pairs[l] = near_pairs(cs, ct, dl);
    trans[l] = occupied_translations(cs, ct, dl);
  }
  int best = lmin;
  double best_cost = -1, below = 0; /* translations of levels lmin..l (those above are common) */
  for (int l = lmin; l <= lmax; l++) {
    below += trans[l];
    const double cost = pair_cost * pairs[l] + translation_cost * below;
    if (best_cost < 0 || cost < best_cost) best = l, best_cost = cost;
  }
  free(cs), free(ct);
  return best;
}
