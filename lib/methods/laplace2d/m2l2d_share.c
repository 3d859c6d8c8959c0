/* m2l2d_share.c — the translation lists of m2l2d.cl's shared-w kernels:
 * translations bundled by (level, offset) for m2l2d_share, target cells
 * bundled by (level, position in the parent) for m2l2d_fused_share. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace2d/fmm2d.h"

#define NO_CELL 0xffffffffu /* as m2l2d.cl */
#define NOFF 27             /* interaction offsets of a cell of a given position in its parent */

/* Offset j (0..26) of the interaction list of a cell at position cp
 * (bit 0: x odd, bit 1: y odd) in its parent: children of the parent's
 * neighbours that are not the cell's neighbours, row by row. */
void fmmcl_m2l2d_offset(int cp, int j, int *dx, int *dy) {
  const int x0 = (cp & 1) ? -3 : -2, y0 = (cp & 2) ? -3 : -2;
  int n = 0;
  *dx = *dy = 0;
  for (int oy = y0; oy < y0 + 6; oy++)
    for (int ox = x0; ox < x0 + 6; ox++) {
      if (abs(ox) <= 1 && abs(oy) <= 1) continue;
      if (n++ == j) {
        *dx = ox, *dy = oy;
        return;
      }
    }
}

/* Index j of offset (dx, dy) for position cp, -1 if not in its list. */
static int offset_index(int cp, int dx, int dy) {
  const int x0 = (cp & 1) ? -3 : -2, y0 = (cp & 2) ? -3 : -2;
  if (dx < x0 || dx >= x0 + 6 || dy < y0 || dy >= y0 + 6 || (abs(dx) <= 1 && abs(dy) <= 1)) return -1;
  int n = 0;
  for (int oy = y0; oy <= dy; oy++)
    for (int ox = x0; ox < x0 + 6; ox++) {
      if (oy == dy && ox == dx) return n;
      if (!(abs(ox) <= 1 && abs(oy) <= 1)) n++;
    }
  return -1;
}

static void put_w(void *w, size_t rs, size_t i, int dx, int dy, double log_side) {
  const double w2 = (double)dx * dx + (double)dy * dy;
  const double v[4] = {dx / w2, -dy / w2, 0.5 * log(w2) + log_side, 0};
  for (int c = 0; c < 4; c++) {
    if (rs == 4) ((float *)w)[4 * i + c] = (float)v[c];
    else ((double *)w)[4 * i + c] = v[c];
  }
}

void fmmcl_m2l2d_bundles_free(fmmcl_m2l2d_bundles *b) {
  free(b->src), free(b->rows), free(b->idx), free(b->w);
  memset(b, 0, sizeof *b);
}

/* Translations grouped by (level, offset) key, each key's translations
 * in list order, its last bundle padded with NO_CELL sources. */
static fmmcl_status bundle_translations(const fmmcl_m2l2d_list *in, size_t tpw, size_t rs,
                                        fmmcl_m2l2d_bundles *out) {
  const size_t nkeys = (size_t)(FMMCL_QUADTREE2D_MAX_LEVELS + 1) * 49, n_trans = in->begin[in->n_rows];
  size_t *count = calloc(nkeys, sizeof *count), *first = calloc(nkeys, sizeof *first);
  fmmcl_status st = count && first ? FMMCL_SUCCESS : FMMCL_ERROR_OUT_OF_MEMORY;
  for (size_t r = 0; !st && r < in->n_rows; r++)
    for (size_t t = in->begin[r]; t < in->begin[r + 1]; t++) {
      const int dx = in->dxy[2 * t], dy = in->dxy[2 * t + 1];
      if (abs(dx) > 3 || abs(dy) > 3 || (abs(dx) <= 1 && abs(dy) <= 1) ||
          in->level[r] > FMMCL_QUADTREE2D_MAX_LEVELS)
        st = FMMCL_ERROR_INTERNAL; /* not a quadtree interaction offset */
      else count[(size_t)in->level[r] * 49 + (size_t)(dx + 3) + 7 * (size_t)(dy + 3)]++;
    }
  size_t nb = 0;
  for (size_t k = 0; !st && k < nkeys; k++) first[k] = nb, nb += (count[k] + tpw - 1) / tpw;
  out->n_bundles = nb, out->tpw = tpw;
  if (!st) {
    out->src = malloc((nb * tpw + 1) * sizeof *out->src), out->idx = malloc((n_trans + 1) * sizeof *out->idx);
    out->w = malloc((nb + 1) * 4 * rs);
    if (!out->src || !out->idx || !out->w) st = FMMCL_ERROR_OUT_OF_MEMORY;
  }
  if (!st) {
    for (size_t i = 0; i < nb * tpw; i++) out->src[i] = NO_CELL;
    memset(count, 0, nkeys * sizeof *count); /* now: filled so far per key */
    for (size_t r = 0; r < in->n_rows; r++)
      for (size_t t = in->begin[r]; t < in->begin[r + 1]; t++) {
        const int dx = in->dxy[2 * t], dy = in->dxy[2 * t + 1];
        const size_t k = (size_t)in->level[r] * 49 + (size_t)(dx + 3) + 7 * (size_t)(dy + 3);
        const size_t pos = first[k] * tpw + count[k]++;
        out->src[pos] = in->src[t], out->idx[t] = (cl_uint)pos;
        if (pos % tpw == 0) put_w(out->w, rs, pos / tpw, dx, dy, in->log_side[in->level[r]]);
      }
  }
  free(count), free(first);
  return st;
}

/* Target rows grouped by (level, position in the parent), TPW per bundle,
 * each row's sources placed at their offset's index, NO_CELL elsewhere. */
static fmmcl_status bundle_cells(const fmmcl_m2l2d_list *in, size_t tpw, size_t rs,
                                 fmmcl_m2l2d_bundles *out) {
  const size_t nkeys = (size_t)(FMMCL_QUADTREE2D_MAX_LEVELS + 1) * 4;
  size_t *count = calloc(nkeys, sizeof *count), *first = calloc(nkeys, sizeof *first);
  fmmcl_status st = count && first ? FMMCL_SUCCESS : FMMCL_ERROR_OUT_OF_MEMORY;
  for (size_t r = 0; !st && r < in->n_rows; r++) {
    if (in->level[r] > FMMCL_QUADTREE2D_MAX_LEVELS) st = FMMCL_ERROR_INTERNAL;
    else count[(size_t)in->level[r] * 4 + in->position[r]]++;
  }
  size_t nb = 0;
  for (size_t k = 0; !st && k < nkeys; k++) first[k] = nb, nb += (count[k] + tpw - 1) / tpw;
  out->n_bundles = nb, out->tpw = tpw;
  if (!st) {
    out->src = malloc((nb * NOFF * tpw + 1) * sizeof *out->src),
    out->rows = malloc((nb * tpw + 1) * sizeof *out->rows);
    out->w = malloc((nb * NOFF + 1) * 4 * rs);
    if (!out->src || !out->rows || !out->w) st = FMMCL_ERROR_OUT_OF_MEMORY;
  }
  if (!st) {
    for (size_t i = 0; i < nb * NOFF * tpw; i++) out->src[i] = NO_CELL;
    for (size_t i = 0; i < nb * tpw; i++) out->rows[i] = NO_CELL;
    memset(count, 0, nkeys * sizeof *count);
    for (size_t r = 0; !st && r < in->n_rows; r++) {
      const int cp = in->position[r];
      const size_t k = (size_t)in->level[r] * 4 + (size_t)cp, pos = first[k] * tpw + count[k]++;
      const size_t b = pos / tpw, c = pos % tpw;
      out->rows[pos] = in->rows[r];
      if (c == 0)
        for (int j = 0; j < NOFF; j++) {
          int dx, dy;
          fmmcl_m2l2d_offset(cp, j, &dx, &dy);
          put_w(out->w, rs, b * NOFF + (size_t)j, dx, dy, in->log_side[in->level[r]]);
        }
      for (size_t t = in->begin[r]; t < in->begin[r + 1]; t++) {
        const int j = offset_index(cp, in->dxy[2 * t], in->dxy[2 * t + 1]);
        cl_uint *slot = j < 0 ? NULL : &out->src[(b * NOFF + (size_t)j) * tpw + c];
        if (!slot || *slot != NO_CELL) st = FMMCL_ERROR_INTERNAL; /* off the list, or twice */
        else *slot = in->src[t];
      }
    }
  }
  free(count), free(first);
  return st;
}

fmmcl_status fmmcl_m2l2d_bundle(const fmmcl_m2l2d_list *in, int fused, size_t tpw, size_t real_size,
                                fmmcl_m2l2d_bundles *out) {
  memset(out, 0, sizeof *out);
  if (tpw < 1) return FMMCL_ERROR_INVALID_ARGUMENT;
  fmmcl_status st =
      fused ? bundle_cells(in, tpw, real_size, out) : bundle_translations(in, tpw, real_size, out);
  if (st) fmmcl_m2l2d_bundles_free(out);
  return st;
}
