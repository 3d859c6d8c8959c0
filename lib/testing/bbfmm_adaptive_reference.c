/* bbfmm_adaptive_reference.c — the black-box FMM on the adaptive octree of
 * tree3d.h with its U, V, W, X lists, on the host (plain C, OpenMP, double,
 * dense M2L): what the device's adaptive path is checked against. */
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"
#include "tree/tree3d.h"

/* Node m of a cell: y = c + h x_m per dimension. */
static void node_pos(int n, const double *x, const fmmcl_tree3d_cell *c, int m, double *y) {
  int idx[3] = {m / (n * n), m / n % n, m % n};
  for (int d = 0; d < 3; d++) y[d] = c->center[d] + c->half_width * x[idx[d]];
}

/* v[m] = prod_d S_n(x_{m_d}, (p_d - c_d) / h) for every node m. */
static void interp(int n, const double *p, const fmmcl_tree3d_cell *c, double *v) {
  double w[3 * FMMCL_BBFMM_MAX_ORDER];
  for (int d = 0; d < 3; d++) fmmcl_bbfmm_weights(n, (p[d] - c->center[d]) / c->half_width, w + d * n);
  for (int m = 0; m < n * n * n; m++) v[m] = w[m / (n * n)] * w[n + m / n % n] * w[2 * n + m % n];
}

/* The child-parent factor between parent node m and child node mc for a
 * child in octant (a0, a1, a2). */
static double child_factor(int n, const double *s, const int *a, int m, int mc) {
  return s[(a[0] * n + m / (n * n)) * n + mc / (n * n)] * s[(a[1] * n + m / n % n) * n + mc / n % n] *
         s[(a[2] * n + m % n) * n + mc % n];
}

static void upward(int n, const fmmcl_tree3d *t, const double *q, const double *s, double *w) {
  int n3 = n * n * n;
#pragma omp parallel for schedule(dynamic)
  for (size_t c = 0; c < t->n_cells; c++) {
    const fmmcl_tree3d_cell *cell = &t->cells[c];
    if (!fmmcl_tree3d_is_leaf(cell)) continue;
    double v[FMMCL_BBFMM_MAX_ORDER * FMMCL_BBFMM_MAX_ORDER * FMMCL_BBFMM_MAX_ORDER];
    for (size_t j = cell->src_begin; j < cell->src_end; j++) {
      interp(n, t->source_xyz + 3 * j, cell, v);
      for (int m = 0; m < n3; m++) w[c * n3 + m] += q[j] * v[m];
    }
  }
  for (int l = t->n_levels - 2; l >= 0; l--)
#pragma omp parallel for schedule(dynamic)
    for (size_t p = t->level_begin[l]; p < t->level_begin[l + 1]; p++) {
      const fmmcl_tree3d_cell *cell = &t->cells[p];
      for (int32_t c = cell->child_begin; c < cell->child_begin + cell->n_children; c++) {
        int a[3];
        for (int d = 0; d < 3; d++) a[d] = t->cells[c].anchor[d] & 1;
        for (int m = 0; m < n3; m++)
          for (int mc = 0; mc < n3; mc++)
            w[p * n3 + m] += child_factor(n, s, a, m, mc) * w[(size_t)c * n3 + mc];
      }
    }
}

/* P2L (X list) and M2L (V list, dense) into every cell's locals, then L2L. */
static void downward(const fmmcl_bbfmm_kfun *k, int n, const fmmcl_tree3d *t,
                     const fmmcl_tree3d_fmm_lists *li, const double *x, const double *q, const double *s,
                     const double *w, double *l) {
  int n3 = n * n * n;
#pragma omp parallel for schedule(dynamic)
  for (size_t b = 0; b < t->n_cells; b++) {
    const fmmcl_tree3d_cell *cb = &t->cells[b];
    for (int m = 0; m < n3; m++) {
      double y[3], z[3], acc = 0;
      node_pos(n, x, cb, m, y);
      for (size_t e = li->x.offsets[b]; e < li->x.offsets[b + 1]; e++) {
        const fmmcl_tree3d_cell *ca = &t->cells[li->x.indices[e]];
        for (size_t j = ca->src_begin; j < ca->src_end; j++) {
          const double *p = t->source_xyz + 3 * j;
          acc += q[j] * fmmcl_bbfmm_kfun_eval(k, y[0] - p[0], y[1] - p[1], y[2] - p[2]);
        }
      }
      for (size_t e = li->v.offsets[b]; e < li->v.offsets[b + 1]; e++) {
        int32_t a = li->v.indices[e];
        for (int mc = 0; mc < n3; mc++) {
          node_pos(n, x, &t->cells[a], mc, z);
          acc += w[(size_t)a * n3 + mc] * fmmcl_bbfmm_kfun_eval(k, y[0] - z[0], y[1] - z[1], y[2] - z[2]);
        }
      }
      l[b * n3 + m] += acc;
    }
  }
  for (int lev = 0; lev + 1 < t->n_levels; lev++)
#pragma omp parallel for schedule(dynamic)
    for (size_t p = t->level_begin[lev]; p < t->level_begin[lev + 1]; p++) {
      const fmmcl_tree3d_cell *cell = &t->cells[p];
      for (int32_t c = cell->child_begin; c < cell->child_begin + cell->n_children; c++) {
        int a[3];
        for (int d = 0; d < 3; d++) a[d] = t->cells[c].anchor[d] & 1;
        for (int mc = 0; mc < n3; mc++) {
          double acc = 0;
          for (int m = 0; m < n3; m++) acc += child_factor(n, s, a, m, mc) * l[p * n3 + m];
          l[(size_t)c * n3 + mc] += acc;
        }
      }
    }
}

/* At each leaf's targets: L2P, M2P (W list), P2P (U list). */
static void evaluate(const fmmcl_bbfmm_kfun *k, int n, const fmmcl_tree3d *t,
                     const fmmcl_tree3d_fmm_lists *li, const double *x, const double *q, const double *w,
                     const double *l, double *f) {
  int n3 = n * n * n;
#pragma omp parallel for schedule(dynamic)
  for (size_t b = 0; b < t->n_cells; b++) {
    const fmmcl_tree3d_cell *cb = &t->cells[b];
    if (!fmmcl_tree3d_is_leaf(cb)) continue;
    double v[FMMCL_BBFMM_MAX_ORDER * FMMCL_BBFMM_MAX_ORDER * FMMCL_BBFMM_MAX_ORDER], z[3];
    for (size_t i = cb->tgt_begin; i < cb->tgt_end; i++) {
      const double *p = t->target_xyz + 3 * i;
      double acc = 0;
      interp(n, p, cb, v);
      for (int m = 0; m < n3; m++) acc += v[m] * l[b * n3 + m];
      for (size_t e = li->w.offsets[b]; e < li->w.offsets[b + 1]; e++) {
        int32_t a = li->w.indices[e];
        for (int m = 0; m < n3; m++) {
          node_pos(n, x, &t->cells[a], m, z);
          acc += w[(size_t)a * n3 + m] * fmmcl_bbfmm_kfun_eval(k, p[0] - z[0], p[1] - z[1], p[2] - z[2]);
        }
      }
      for (size_t e = li->u.offsets[b]; e < li->u.offsets[b + 1]; e++) {
        const fmmcl_tree3d_cell *ca = &t->cells[li->u.indices[e]];
        for (size_t j = ca->src_begin; j < ca->src_end; j++) {
          const double *y = t->source_xyz + 3 * j;
          acc += q[j] * fmmcl_bbfmm_kfun_eval(k, p[0] - y[0], p[1] - y[1], p[2] - y[2]);
        }
      }
      f[i] = acc;
    }
  }
}

fmmcl_status fmmcl_bbfmm_adaptive_reference(const fmmcl_bbfmm_kfun *k, int n, size_t ns, const double *src,
                                            size_t nt, const double *tgt, size_t leaf_size,
                                            const double *charges, double *potential,
                                            size_t list_entries[4]) {
  if (k->kind == FMMCL_BBFMM_USER || n < FMMCL_BBFMM_MIN_ORDER || n > FMMCL_BBFMM_MAX_ORDER)
    return FMMCL_ERROR_INVALID_ARGUMENT;
  fmmcl_tree3d *t;
  fmmcl_status st = fmmcl_tree3d_build(ns, src, nt, tgt, leaf_size, FMMCL_BBFMM_MAX_DEPTH, &t);
  if (st) return st;
  fmmcl_tree3d_fmm_lists li;
  st = fmmcl_tree3d_fmm_lists_build(t, &li);
  if (st) {
    fmmcl_tree3d_destroy(t);
    return st;
  }
  size_t n3 = (size_t)n * n * n;
  double x[FMMCL_BBFMM_MAX_ORDER], s[2 * FMMCL_BBFMM_MAX_ORDER * FMMCL_BBFMM_MAX_ORDER];
  fmmcl_bbfmm_nodes(n, x);
  fmmcl_bbfmm_child_table(n, s);
  double *q = malloc(ns * sizeof *q), *f = malloc(t->n_targets * sizeof *f);
  double *w = calloc(n3 * t->n_cells, sizeof *w), *l = calloc(n3 * t->n_cells, sizeof *l);
  if (!q || !f || !w || !l) {
    st = FMMCL_ERROR_OUT_OF_MEMORY;
  } else {
    for (size_t j = 0; j < ns; j++) q[j] = charges[t->source_perm[j]];
    upward(n, t, q, s, w);
    downward(k, n, t, &li, x, q, s, w, l);
    evaluate(k, n, t, &li, x, q, w, l, f);
    for (size_t i = 0; i < t->n_targets; i++) potential[t->target_perm[i]] = f[i];
    if (list_entries) {
      const fmmcl_tree3d_csr *c[4] = {&li.u, &li.v, &li.w, &li.x};
      for (int i = 0; i < 4; i++) list_entries[i] = c[i]->offsets[c[i]->n_rows];
    }
  }
  free(q), free(f), free(w), free(l);
  fmmcl_tree3d_fmm_lists_free(&li);
  fmmcl_tree3d_destroy(t);
  return st;
}
