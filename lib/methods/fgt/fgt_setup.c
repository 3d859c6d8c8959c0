/* fgt_setup.c — the FGT's geometry: points binned into boxes of the grid,
 * and for each target box the source boxes within the cut-off, each with the
 * interaction kind that the work estimate finds cheapest. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/fgt/fgt.h"

int fmmcl_fgt_forced_kind(void) {
  const char *v = getenv("FMMCL_FGT_FORCE");
  if (!v || !*v) return FMMCL_FGT_AUTO;
  if (strcmp(v, "direct") == 0) return FMMCL_FGT_DIRECT;
  if (strcmp(v, "hermite") == 0) return FMMCL_FGT_HERMITE;
  if (strcmp(v, "taylor") == 0) return FMMCL_FGT_TAYLOR;
  if (strcmp(v, "h2t") == 0) return FMMCL_FGT_H2T;
  return FMMCL_FGT_AUTO;
}

static int cell_cmp(const int64_t *a, const int64_t *b, int dim) {
  for (int k = 0; k < dim; k++)
    if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
  return 0;
}

/* Stable merge sort of idx by the cell tuples cells[idx * dim ..]. */
static void sort_by_cell(size_t *idx, size_t *tmp, size_t n, const int64_t *cells, int dim) {
  if (n < 2) return;
  size_t h = n / 2;
  sort_by_cell(idx, tmp, h, cells, dim);
  sort_by_cell(idx + h, tmp + h, n - h, cells, dim);
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n)
    tmp[k++] = cell_cmp(cells + idx[j] * dim, cells + idx[i] * dim, dim) < 0 ? idx[j++] : idx[i++];
  while (i < h) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, n * sizeof *idx);
}

/* Sorts idx (0..n-1 on entry) by the cell tuples when they fit one 64-bit
 * mixed-radix key (first axis most significant, so key order is tuple
 * order): a stable LSD radix sort, linear and cache friendly where the
 * merge sort's tuple compares miss the cache (most of plan creation at
 * N = 1e7). Returns 0 when the key does not fit or memory is short. */
static int radix_sort_by_cell(size_t *idx, size_t n, const int64_t *cells, int dim) {
  int64_t span[FMMCL_MAX_DIM];
  double total = 1;
  for (int k = 0; k < dim; k++) {
    int64_t hi = 0;
    for (size_t i = 0; i < n; i++) hi = cells[i * dim + k] > hi ? cells[i * dim + k] : hi;
    span[k] = hi + 1;
    total *= (double)span[k];
  }
  if (total > 0x1p62) return 0;
  int bits = 1;
  while (bits < 63 && (double)(1ULL << bits) < total) bits++;
  uint64_t *key = malloc(2 * n * sizeof *key);
  size_t *tmp = malloc(n * sizeof *tmp);
  if (!key || !tmp) {
    free(key);
    free(tmp);
    return 0;
  }
  uint64_t *key2 = key + n;
#pragma omp parallel for schedule(static) if (n > 100000)
  for (size_t i = 0; i < n; i++) {
    uint64_t v = 0;
    for (int k = 0; k < dim; k++) v = v * (uint64_t)span[k] + (uint64_t)cells[i * dim + k];
    key[i] = v;
  }
  for (int shift = 0; shift < bits; shift += 11) {
    size_t count[2049] = {0};
    for (size_t i = 0; i < n; i++) count[((key[i] >> shift) & 2047) + 1]++;
    for (int d = 0; d < 2048; d++) count[d + 1] += count[d];
    for (size_t i = 0; i < n; i++) {
      size_t to = count[(key[i] >> shift) & 2047]++;
      key2[to] = key[i];
      tmp[to] = idx[i];
    }
    memcpy(key, key2, n * sizeof *key);
    memcpy(idx, tmp, n * sizeof *idx);
  }
  free(key);
  free(tmp);
  return 1;
}

static void boxes_free(fmmcl_fgt_boxes *b) {
  free(b->x);
  free(b->perm);
  free(b->start);
  free(b->cell);
  free(b->centre);
  free(b->frame);
  memset(b, 0, sizeof *b);
}

double fmmcl_fgt_frame_unit(double side, double extent) {
  double unit = ldexp(1.0, ilogb(side / 8));
  /* frames reach extent / unit units: within float's 24 bits, with room */
  while (extent / unit > 0x1p22) unit *= 2;
  return unit;
}

fmmcl_status fmmcl_fgt_box_frames(fmmcl_context ctx, const fmmcl_fgt_params *par, double unit,
                                  fmmcl_fgt_boxes *b) {
  const int dim = par->dim;
  b->frame = malloc(b->nbox * dim * sizeof *b->frame + 8);
  if (!b->frame)
    return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu boxes", b->nbox);
  for (size_t j = 0; j < b->nbox * dim; j++)
    b->frame[j] = unit * nearbyint(((double)b->cell[j] + 0.5) * par->side / unit);
  return FMMCL_SUCCESS;
}

/* Bins n points (caller's coordinates) into the grid of side `side` (scaled)
 * whose corner is origin (scaled). */
static fmmcl_status boxes_build(fmmcl_context ctx, const fmmcl_fgt_params *par, const double *origin,
                                size_t n, const double *x, fmmcl_fgt_boxes *b) {
  const int dim = par->dim;
  memset(b, 0, sizeof *b);
  b->n = n;
  int64_t *cells = calloc(n * dim, sizeof *cells);
  size_t *tmp = malloc(n * sizeof *tmp);
  b->perm = malloc(n * sizeof *b->perm);
  b->x = malloc(n * dim * sizeof *b->x);
  b->start = malloc((n + 1) * sizeof *b->start);
  if (!cells || !tmp || !b->perm || !b->x || !b->start) {
    free(cells);
    free(tmp);
    return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory binning %zu points", n);
  }
#pragma omp parallel for schedule(static) if (n > 100000)
  for (size_t i = 0; i < n; i++) {
    b->perm[i] = i;
    for (int k = 0; k < dim; k++) {
      /* >= 0: origin is the minimum (guard the rounding of the division) */
      int64_t c = (int64_t)floor((x[i * dim + k] / par->h - origin[k]) / par->side);
      cells[i * dim + k] = c < 0 ? 0 : c;
    }
  }
  if (!radix_sort_by_cell(b->perm, n, cells, dim)) sort_by_cell(b->perm, tmp, n, cells, dim);
  size_t nbox = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || cell_cmp(cells + b->perm[i] * dim, cells + b->perm[i - 1] * dim, dim)) b->start[nbox++] = i;
    for (int k = 0; k < dim; k++) b->x[i * dim + k] = x[b->perm[i] * dim + k] / par->h;
  }
  b->start[nbox] = n;
  b->nbox = nbox;
  b->cell = malloc(nbox * dim * sizeof *b->cell);
  b->centre = malloc(nbox * dim * sizeof *b->centre);
  if (!b->cell || !b->centre) {
    free(cells);
    free(tmp);
    return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu boxes", nbox);
  }
  for (size_t j = 0; j < nbox; j++)
    for (int k = 0; k < dim; k++) {
      b->cell[j * dim + k] = cells[b->perm[b->start[j]] * dim + k];
      b->centre[j * dim + k] = origin[k] + ((double)b->cell[j * dim + k] + 0.5) * par->side;
    }
  free(cells);
  free(tmp);
  return FMMCL_SUCCESS;
}

/* First box in [lo, hi) whose coordinate k is >= v; the boxes there share
 * their first k coordinates, so they are sorted by coordinate k. */
static size_t lower_in(const fmmcl_fgt_boxes *b, int dim, int k, int64_t v, size_t lo, size_t hi) {
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (b->cell[mid * dim + k] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The kind a work estimate finds cheapest for ns sources meeting nt targets
 * with nterms-long expansions (flops per point pair, per term). */
static int cheapest(size_t ns, size_t nt, int nterms, int dim, int h2t) {
  const double P = nterms;
  double cost[FMMCL_FGT_KINDS];
  cost[FMMCL_FGT_DIRECT] = (double)ns * nt * (2 * dim + 12);
  cost[FMMCL_FGT_HERMITE] = (double)nt * P * (dim + 2) + (double)ns * P * 2;
  cost[FMMCL_FGT_TAYLOR] = (double)ns * P * (dim + 3) + (double)nt * P * 2;
  cost[FMMCL_FGT_H2T] = P * P * (dim + 1) + ((double)ns + nt) * P * 2;
  int best = 0;
  for (int k = 1; k < (h2t ? FMMCL_FGT_KINDS : FMMCL_FGT_H2T); k++)
    if (cost[k] < cost[best]) best = k;
  return best;
}

typedef struct pair_list {
  uint32_t *src;
  unsigned char *kind;
  size_t n, cap;
} pair_list;

static int pair_push(pair_list *l, uint32_t s, int kind) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    uint32_t *a = realloc(l->src, cap * sizeof *a);
    if (!a) return -1;
    l->src = a;
    unsigned char *k = realloc(l->kind, cap);
    if (!k) return -1;
    l->kind = k;
    l->cap = cap;
  }
  l->src[l->n] = s;
  l->kind[l->n++] = (unsigned char)kind;
  return 0;
}

/* Squared gap between cells a and b along one axis, in scaled units. */
static double gap2(int64_t a, int64_t b, double side) {
  int64_t d = a > b ? a - b : b - a;
  double g = d > 0 ? (double)(d - 1) * side : 0;
  return g * g;
}

/* lower_in where the answer is likely near lo: steps of 1, 2, 4, ... from
 * lo first, so a run of r boxes costs log r, not log(hi - lo). */
static size_t gallop_in(const fmmcl_fgt_boxes *b, int dim, int k, int64_t v, size_t lo, size_t hi) {
  size_t step = 1;
  while (lo + step < hi && b->cell[(lo + step - 1) * dim + k] < v) lo += step, step *= 2;
  return lower_in(b, dim, k, v, lo, lo + step < hi ? lo + step : hi);
}

typedef struct walk {
  const fmmcl_fgt_setup *s;
  size_t t; /* target box */
  int force;
  pair_list *out;
  int fail;
} walk;

static void consider(walk *w, size_t sb) {
  const fmmcl_fgt_setup *s = w->s;
  const int dim = s->par.dim;
  double g = 0;
  for (int k = 0; k < dim; k++)
    g += gap2(s->src.cell[sb * dim + k], s->tgt.cell[w->t * dim + k], s->par.side);
  if (g > s->par.cutoff * s->par.cutoff) return;
  size_t ns = s->src.start[sb + 1] - s->src.start[sb], nt = s->tgt.start[w->t + 1] - s->tgt.start[w->t];
  int kind = w->force != FMMCL_FGT_AUTO ? w->force : cheapest(ns, nt, s->par.nterms, dim, s->par.h2t);
  if (pair_push(w->out, (uint32_t)sb, kind)) w->fail = 1;
}

/* The source boxes [lo, hi) share the target cell's neighbourhood in their
 * first k coordinates, at squared gap g so far. Walks the values of
 * coordinate k that occur there, within the cut-off's reach, each over the
 * boxes that have it: a trie over the sorted cells, so a sparse grid costs
 * its occupied prefixes, not every cell offset of the ball (3^6 to 7^6 of
 * them in 6 dimensions). The lists come out in the boxes' order. */
static void enumerate(walk *w, int k, double g, size_t lo, size_t hi) {
  const fmmcl_fgt_setup *s = w->s;
  const int dim = s->par.dim;
  const int64_t tc = s->tgt.cell[w->t * dim + k];
  const double R2 = s->par.cutoff * s->par.cutoff;
  /* gap (|o| - 1) side within the cut-off's remainder */
  const int64_t reach = (int64_t)floor(sqrt(fmax(R2 - g, 0)) / s->par.side) + 1;
  size_t j = lower_in(&s->src, dim, k, tc - reach, lo, hi);
  while (j < hi) {
    const int64_t v = s->src.cell[j * dim + k];
    if (v > tc + reach) break;
    const size_t e = k == dim - 1 ? j + 1 : gallop_in(&s->src, dim, k, v + 1, j + 1, hi);
    const double gk = gap2(v, tc, s->par.side);
    if (g + gk <= R2) {
      if (k == dim - 1) consider(w, j);
      else enumerate(w, k + 1, g + gk, j, e);
    }
    j = e;
  }
}

static fmmcl_status lists_build(fmmcl_context ctx, fmmcl_fgt_setup *s, int force) {
  const size_t ntb = s->tgt.nbox;
  pair_list *lists = calloc(ntb, sizeof *lists);
  if (!lists) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for FGT lists");
  int fail = 0;
#pragma omp parallel for schedule(dynamic, 16) reduction(| : fail)
  for (size_t t = 0; t < ntb; t++) {
    walk w = {.s = s, .t = t, .force = force, .out = &lists[t], .fail = 0};
    enumerate(&w, 0, 0, 0, s->src.nbox);
    fail |= w.fail;
  }
  fmmcl_status st =
      fail ? fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for FGT lists") : FMMCL_SUCCESS;
  for (int k = 0; k < FMMCL_FGT_KINDS && !st; k++) {
    size_t total = 0;
    s->list_start[k] = malloc((ntb + 1) * sizeof(size_t));
    if (!s->list_start[k]) {
      st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
      break;
    }
    for (size_t t = 0; t < ntb; t++) {
      s->list_start[k][t] = total;
      for (size_t i = 0; i < lists[t].n; i++) total += lists[t].kind[i] == k;
    }
    s->list_start[k][ntb] = total;
    s->list[k] = malloc((total ? total : 1) * sizeof(uint32_t));
    if (!s->list[k]) {
      st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
      break;
    }
    for (size_t t = 0, j = 0; t < ntb; t++)
      for (size_t i = 0; i < lists[t].n; i++)
        if (lists[t].kind[i] == k) s->list[k][j++] = lists[t].src[i];
  }
  for (size_t t = 0; t < ntb; t++) {
    free(lists[t].src);
    free(lists[t].kind);
  }
  free(lists);
  return st;
}

/* Slots of the boxes that carry expansions, and the work of each kind. */
static fmmcl_status slots_build(fmmcl_context ctx, fmmcl_fgt_setup *s) {
  const size_t nsb = s->src.nbox, ntb = s->tgt.nbox;
  s->hslot = malloc(nsb * sizeof *s->hslot);
  s->hbox = malloc(nsb * sizeof *s->hbox);
  s->tslot = malloc(ntb * sizeof *s->tslot);
  s->tbox = malloc(ntb * sizeof *s->tbox);
  if (!s->hslot || !s->hbox || !s->tslot || !s->tbox)
    return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t b = 0; b < nsb; b++) s->hslot[b] = -1;
  memset(s->pairs, 0, sizeof s->pairs);
  s->ntay = 0;
  for (size_t t = 0; t < ntb; t++) {
    const double nt = (double)(s->tgt.start[t + 1] - s->tgt.start[t]);
    for (int k = 0; k < FMMCL_FGT_KINDS; k++)
      for (size_t i = s->list_start[k][t]; i < s->list_start[k][t + 1]; i++) {
        uint32_t b = s->list[k][i];
        const double ns = (double)(s->src.start[b + 1] - s->src.start[b]);
        s->pairs[k] += k == FMMCL_FGT_DIRECT    ? ns * nt
                       : k == FMMCL_FGT_HERMITE ? nt
                       : k == FMMCL_FGT_TAYLOR  ? ns
                                                : 1;
        if ((k == FMMCL_FGT_HERMITE || k == FMMCL_FGT_H2T) && s->hslot[b] < 0) s->hslot[b] = 0;
      }
    const int tay = s->list_start[FMMCL_FGT_TAYLOR][t + 1] > s->list_start[FMMCL_FGT_TAYLOR][t] ||
                    s->list_start[FMMCL_FGT_H2T][t + 1] > s->list_start[FMMCL_FGT_H2T][t];
    s->tslot[t] = tay ? (int32_t)s->ntay : -1;
    if (tay) s->tbox[s->ntay++] = (uint32_t)t;
  }
  s->nh = 0;
  for (size_t b = 0; b < nsb; b++)
    if (s->hslot[b] == 0 || s->hslot[b] > 0) {
      s->hslot[b] = (int32_t)s->nh;
      s->hbox[s->nh++] = (uint32_t)b;
    }
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_fgt_setup_build(fmmcl_context ctx, const fmmcl_fgt_params *par, size_t ns,
                                   const double *src, size_t nt, const double *tgt, int force,
                                   fmmcl_fgt_setup *s) {
  return fmmcl_fgt_setup_build_device(ctx, par, ns, src, nt, tgt, force, NULL, s);
}

/* The interaction lists stay on the host: they are built from the occupied
 * boxes only (their cells and point counts), a list far shorter than the
 * points once boxes hold several points each. */
fmmcl_status fmmcl_fgt_setup_build_device(fmmcl_context ctx, const fmmcl_fgt_params *par, size_t ns,
                                          const double *src, size_t nt, const double *tgt, int force,
                                          fmmcl_fgt_device_bins *dev, fmmcl_fgt_setup *s) {
  memset(s, 0, sizeof *s);
  s->par = *par;
  const int dim = par->dim;
  int nterms = 0;
  s->alpha = fmmcl_fgt_multi_indices(par->p, dim, &nterms);
  if (!s->alpha) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (nterms != par->nterms) return fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "FGT term count mismatch");
  double origin[FMMCL_MAX_DIM], hi[FMMCL_MAX_DIM];
  for (int k = 0; k < dim; k++) origin[k] = hi[k] = src[k] / par->h;
  for (size_t i = 0; i < ns; i++)
    for (int k = 0; k < dim; k++) {
      double v = src[i * dim + k] / par->h;
      origin[k] = v < origin[k] ? v : origin[k];
      hi[k] = v > hi[k] ? v : hi[k];
    }
  for (size_t i = 0; i < nt; i++)
    for (int k = 0; k < dim; k++) {
      double v = tgt[i * dim + k] / par->h;
      origin[k] = v < origin[k] ? v : origin[k];
      hi[k] = v > hi[k] ? v : hi[k];
    }
  for (int k = 0; k < dim; k++)
    if ((hi[k] - origin[k]) / par->side > 1e15)
      return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                        "sigma is too small for the data's extent (%g boxes across)",
                        (hi[k] - origin[k]) / par->side);
  /* the bounding box (origin, hi) is one pass on the host: the plan needs
   * the extent before it can choose the box side anyway */
  double extent = 0;
  for (int k = 0; k < dim; k++) {
    s->origin[k] = origin[k];
    extent = fmax(extent, hi[k] - origin[k]);
  }
  s->unit = fmmcl_fgt_frame_unit(par->side, extent);
  fmmcl_status st;
  if (dev) {
    st = fmmcl_fgt_bin_device(ctx, par, origin, hi, s->unit, ns, src, dev->real_size, &s->src, &dev->src);
    if (!st)
      st = fmmcl_fgt_bin_device(ctx, par, origin, hi, s->unit, nt, tgt, dev->real_size, &s->tgt, &dev->tgt);
  } else {
    st = boxes_build(ctx, par, origin, ns, src, &s->src);
    if (!st) st = boxes_build(ctx, par, origin, nt, tgt, &s->tgt);
    if (!st) st = fmmcl_fgt_box_frames(ctx, par, s->unit, &s->src);
    if (!st) st = fmmcl_fgt_box_frames(ctx, par, s->unit, &s->tgt);
  }
  if (!st && (s->src.nbox > UINT32_MAX / 2 || s->tgt.nbox > UINT32_MAX / 2))
    st = fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "too many FGT boxes");
  if (!st) st = lists_build(ctx, s, force);
  if (!st) st = slots_build(ctx, s);
  return st;
}

void fmmcl_fgt_setup_free(fmmcl_fgt_setup *s) {
  free(s->alpha);
  boxes_free(&s->src);
  boxes_free(&s->tgt);
  for (int k = 0; k < FMMCL_FGT_KINDS; k++) {
    free(s->list_start[k]);
    free(s->list[k]);
  }
  free(s->hslot);
  free(s->hbox);
  free(s->tslot);
  free(s->tbox);
  memset(s, 0, sizeof *s);
}
