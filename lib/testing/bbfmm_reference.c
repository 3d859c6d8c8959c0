/* bbfmm_reference.c — the black-box FMM on the host (plain C, OpenMP), for
 * a built-in kernel: the reference the device plan is checked against and
 * the means to check that the error falls with the order n. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"

typedef struct level_data {
  int g;         /* cells per side */
  double h;      /* cell half width */
  double *w, *l; /* g^3 cells x n^3 node values */
} level_data;

static void cell_center(const fmmcl_bbfmm_tree *t, const level_data *lv, int ix, int iy, int iz, double *c) {
  int idx[3] = {ix, iy, iz};
  for (int d = 0; d < 3; d++) c[d] = t->center[d] - t->half + (2 * idx[d] + 1) * lv->h;
}

/* 1D weights of a point in a cell, per dimension: w[d * n + m]. */
static void point_weights(int n, const double *p, const double *c, double h, double *w) {
  for (int d = 0; d < 3; d++) fmmcl_bbfmm_weights(n, (p[d] - c[d]) / h, w + d * n);
}

static void p2m(int n, const fmmcl_bbfmm_tree *t, level_data *lv, const double *q) {
  int g = lv->g, n3 = n * n * n;
#pragma omp parallel for schedule(dynamic)
  for (int cell = 0; cell < g * g * g; cell++) {
    double c[3], w[3 * FMMCL_BBFMM_MAX_ORDER];
    cell_center(t, lv, cell / (g * g), cell / g % g, cell % g, c);
    double *out = lv->w + (size_t)cell * n3;
    for (uint32_t j = t->src_start[cell]; j < t->src_start[cell + 1]; j++) {
      point_weights(n, t->src + 3 * (size_t)j, c, lv->h, w);
      for (int m = 0; m < n3; m++) out[m] += q[j] * w[m / (n * n)] * w[n + m / n % n] * w[2 * n + m % n];
    }
  }
}

/* M2M (up = 1): parent += S child; L2L (up = 0): child += S^T parent. */
static void translate(int n, const double *s, level_data *parent, level_data *child, int up) {
  int g = parent->g, n3 = n * n * n;
#pragma omp parallel for schedule(dynamic)
  for (int pc = 0; pc < g * g * g; pc++) {
    int p[3] = {pc / (g * g), pc / g % g, pc % g};
    for (int oct = 0; oct < 8; oct++) {
      int a[3] = {oct >> 2, (oct >> 1) & 1, oct & 1};
      int cg = 2 * g, cc = ((2 * p[0] + a[0]) * cg + 2 * p[1] + a[1]) * cg + 2 * p[2] + a[2];
      double *pv = (up ? parent->w : parent->l) + (size_t)pc * n3;
      double *cv = (up ? child->w : child->l) + (size_t)cc * n3;
      for (int m = 0; m < n3; m++)
        for (int mc = 0; mc < n3; mc++) {
          double f = s[(a[0] * n + m / (n * n)) * n + mc / (n * n)] *
                     s[(a[1] * n + m / n % n) * n + mc / n % n] * s[(a[2] * n + m % n) * n + mc % n];
          if (up) pv[m] += f * cv[mc];
          else cv[mc] += f * pv[m];
        }
    }
  }
}

/* Is source cell s in the interaction list of target cell i (one dimension)? */
static int well_separated_parent_near(const int *i, const int *s, int g) {
  int far = 0;
  for (int d = 0; d < 3; d++) {
    if (s[d] < 0 || s[d] >= g || abs((s[d] >> 1) - (i[d] >> 1)) > 1) return 0;
    if (abs(s[d] - i[d]) > 1) far = 1;
  }
  return far;
}

static int m2l_dense(const fmmcl_bbfmm_kfun *k, int n, level_data *lv) {
  int g = lv->g, n3 = n * n * n;
  double *kt = malloc((size_t)n3 * n3 * sizeof *kt);
  if (!kt) return -1;
  for (int ti = 0; ti < FMMCL_BBFMM_N_TRANSFER; ti++) { /* grouped by transfer vector */
    int tv[3];
    fmmcl_bbfmm_transfer_vector(ti, tv);
    fmmcl_bbfmm_m2l_dense(k, n, lv->h, ti, kt);
#pragma omp parallel for schedule(static)
    for (int cell = 0; cell < g * g * g; cell++) {
      int i[3] = {cell / (g * g), cell / g % g, cell % g}, s[3] = {i[0] + tv[0], i[1] + tv[1], i[2] + tv[2]};
      if (!well_separated_parent_near(i, s, g)) continue;
      const double *ws = lv->w + (size_t)((s[0] * g + s[1]) * g + s[2]) * n3;
      double *lt = lv->l + (size_t)cell * n3;
      for (int a = 0; a < n3; a++) {
        double acc = 0;
        for (int b = 0; b < n3; b++) acc += kt[(size_t)a * n3 + b] * ws[b];
        lt[a] += acc;
      }
    }
  }
  free(kt);
  return 0;
}

static int m2l_compressed(const fmmcl_bbfmm_m2l *m, int n, level_data *lv) {
  int g = lv->g, n3 = n * n * n, r = m->rank;
  size_t nc = (size_t)g * g * g;
  double *wc = malloc(nc * r * sizeof *wc), *lc = calloc(nc * r, sizeof *lc);
  if (!wc || !lc) {
    free(wc), free(lc);
    return -1;
  }
#pragma omp parallel for schedule(static)
  for (long cell = 0; cell < (long)nc; cell++)
    for (int j = 0; j < r; j++) {
      double s = 0;
      for (int i = 0; i < n3; i++) s += m->v[(size_t)j * n3 + i] * lv->w[(size_t)cell * n3 + i];
      wc[(size_t)cell * r + j] = s;
    }
#pragma omp parallel for schedule(static)
  for (long cell = 0; cell < (long)nc; cell++) {
    int i[3] = {(int)(cell / (g * g)), (int)(cell / g % g), (int)(cell % g)};
    for (int ti = 0; ti < FMMCL_BBFMM_N_TRANSFER; ti++) {
      int tv[3];
      fmmcl_bbfmm_transfer_vector(ti, tv);
      int s[3] = {i[0] + tv[0], i[1] + tv[1], i[2] + tv[2]};
      if (!well_separated_parent_near(i, s, g)) continue;
      const double *c = m->c + (size_t)ti * r * r, *ws = wc + (size_t)((s[0] * g + s[1]) * g + s[2]) * r;
      for (int col = 0; col < r; col++)
        for (int row = 0; row < r; row++) lc[(size_t)cell * r + row] += c[(size_t)col * r + row] * ws[col];
    }
    for (int a = 0; a < n3; a++) {
      double s = 0;
      for (int j = 0; j < r; j++) s += m->u[(size_t)j * n3 + a] * lc[(size_t)cell * r + j];
      lv->l[(size_t)cell * n3 + a] += s;
    }
  }
  free(wc), free(lc);
  return 0;
}

static void l2p_p2p(const fmmcl_bbfmm_kfun *k, int n, const fmmcl_bbfmm_tree *t, level_data *lv,
                    const double *q, double *pot_sorted) {
  int g = lv->g, n3 = n * n * n;
#pragma omp parallel for schedule(dynamic)
  for (int cell = 0; cell < g * g * g; cell++) {
    int i[3] = {cell / (g * g), cell / g % g, cell % g};
    double c[3], w[3 * FMMCL_BBFMM_MAX_ORDER];
    cell_center(t, lv, i[0], i[1], i[2], c);
    for (uint32_t a = t->tgt_start[cell]; a < t->tgt_start[cell + 1]; a++) {
      const double *x = t->tgt + 3 * (size_t)a;
      point_weights(n, x, c, lv->h, w);
      double f = 0;
      for (int m = 0; m < n3; m++)
        f += lv->l[(size_t)cell * n3 + m] * w[m / (n * n)] * w[n + m / n % n] * w[2 * n + m % n];
      for (int dx = -1; dx <= 1; dx++)
        for (int dy = -1; dy <= 1; dy++)
          for (int dz = -1; dz <= 1; dz++) {
            int s[3] = {i[0] + dx, i[1] + dy, i[2] + dz};
            if (s[0] < 0 || s[1] < 0 || s[2] < 0 || s[0] >= g || s[1] >= g || s[2] >= g) continue;
            int sc = (s[0] * g + s[1]) * g + s[2];
            for (uint32_t b = t->src_start[sc]; b < t->src_start[sc + 1]; b++) {
              const double *y = t->src + 3 * (size_t)b;
              f += q[b] * fmmcl_bbfmm_kfun_eval(k, x[0] - y[0], x[1] - y[1], x[2] - y[2]);
            }
          }
      pot_sorted[a] = f;
    }
  }
}

fmmcl_status fmmcl_bbfmm_reference(const fmmcl_bbfmm_kfun *k, int n, const fmmcl_bbfmm_tree *t,
                                   fmmcl_bbfmm_m2l *const *m2l, const double *charges, double *potential) {
  return fmmcl_bbfmm_reference_levels(k, n, t, m2l, charges, potential, NULL, NULL);
}

fmmcl_status fmmcl_bbfmm_reference_levels(const fmmcl_bbfmm_kfun *k, int n, const fmmcl_bbfmm_tree *t,
                                          fmmcl_bbfmm_m2l *const *m2l, const double *charges,
                                          double *potential, double **w_out, double **l_out) {
  if (k->kind == FMMCL_BBFMM_USER || n < FMMCL_BBFMM_MIN_ORDER || n > FMMCL_BBFMM_MAX_ORDER)
    return FMMCL_ERROR_INVALID_ARGUMENT;
  int n3 = n * n * n, L = t->depth;
  level_data lv[11];
  memset(lv, 0, sizeof lv);
  double *q = malloc(t->ns * sizeof *q), *pot = malloc(t->nt * sizeof *pot),
         s[2 * FMMCL_BBFMM_MAX_ORDER * FMMCL_BBFMM_MAX_ORDER];
  fmmcl_status st = q && pot ? FMMCL_SUCCESS : FMMCL_ERROR_OUT_OF_MEMORY;
  for (int l = 2; l <= L && !st; l++) {
    lv[l].g = 1 << l;
    lv[l].h = t->half / lv[l].g;
    size_t nc = (size_t)1 << (3 * l);
    lv[l].w = calloc(nc * n3, sizeof(double));
    lv[l].l = calloc(nc * n3, sizeof(double));
    if (!lv[l].w || !lv[l].l) st = FMMCL_ERROR_OUT_OF_MEMORY;
  }
  if (!st) {
    for (size_t j = 0; j < t->ns; j++) q[j] = charges[t->src_perm[j]];
    fmmcl_bbfmm_child_table(n, s);
    p2m(n, t, &lv[L], q);
    for (int l = L - 1; l >= 2; l--) translate(n, s, &lv[l], &lv[l + 1], 1);
    for (int l = 2; l <= L && !st; l++)
      if (m2l ? m2l_compressed(m2l[l], n, &lv[l]) : m2l_dense(k, n, &lv[l])) st = FMMCL_ERROR_OUT_OF_MEMORY;
    for (int l = 2; l < L; l++) translate(n, s, &lv[l], &lv[l + 1], 0);
    if (!st) {
      for (int l = 2; l <= L; l++) {
        size_t bytes = ((size_t)1 << (3 * l)) * n3 * sizeof(double);
        if (w_out && w_out[l]) memcpy(w_out[l], lv[l].w, bytes);
        if (l_out && l_out[l]) memcpy(l_out[l], lv[l].l, bytes);
      }
      l2p_p2p(k, n, t, &lv[L], q, pot);
      for (size_t a = 0; a < t->nt; a++) potential[t->tgt_perm[a]] = pot[a];
    }
  }
  for (int l = 2; l <= L; l++) free(lv[l].w), free(lv[l].l);
  free(q), free(pot);
  return st;
}
