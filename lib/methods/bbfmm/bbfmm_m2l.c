/* bbfmm_m2l.c — the black-box FMM's M2L operators: the 316 transfer
 * vectors' kernel matrices and their SVD compression (Fong & Darve, sec. 3.2:
 * one basis U for the fat stack [K_1 ... K_316], one V for the thin stack). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"

/* Counted, not tabulated: no shared state between threads, and 343 steps
 * are nothing next to what a transfer vector is looked up for. */
int fmmcl_bbfmm_transfer_index(int tx, int ty, int tz) {
  if (abs(tx) > 3 || abs(ty) > 3 || abs(tz) > 3 || (abs(tx) <= 1 && abs(ty) <= 1 && abs(tz) <= 1)) return -1;
  int target = ((tx + 3) * 7 + ty + 3) * 7 + tz + 3, k = 0;
  for (int i = 0; i < target; i++) {
    int x = i / 49 - 3, y = i / 7 % 7 - 3, z = i % 7 - 3;
    if (abs(x) > 1 || abs(y) > 1 || abs(z) > 1) k++;
  }
  return k;
}

void fmmcl_bbfmm_transfer_vector(int idx, int *t) {
  for (int i = 0, k = 0; i < 343; i++) {
    int x = i / 49 - 3, y = i / 7 % 7 - 3, z = i % 7 - 3;
    if (abs(x) > 1 || abs(y) > 1 || abs(z) > 1) {
      if (k == idx) {
        t[0] = x, t[1] = y, t[2] = z;
        return;
      }
      k++;
    }
  }
  t[0] = t[1] = t[2] = 0;
}

void fmmcl_bbfmm_m2l_dense(const fmmcl_bbfmm_kfun *k, int n, double h, int i, double *kt) {
  double x[FMMCL_BBFMM_MAX_ORDER];
  int t[3], n3 = n * n * n;
  fmmcl_bbfmm_nodes(n, x);
  fmmcl_bbfmm_transfer_vector(i, t);
#pragma omp parallel for schedule(static)
  for (int a = 0; a < n3; a++)
    for (int b = 0; b < n3; b++) {
      double d0 = h * (x[a / (n * n)] - x[b / (n * n)] - 2 * t[0]);
      double d1 = h * (x[a / n % n] - x[b / n % n] - 2 * t[1]);
      double d2 = h * (x[a % n] - x[b % n] - 2 * t[2]);
      kt[(size_t)a * n3 + b] = fmmcl_bbfmm_kfun_eval(k, d0, d1, d2);
    }
}

double fmmcl_bbfmm_svd_eps(int n, fmmcl_precision precision) {
  double e = pow(10.0, -(n + 1));
  double floor_ = precision == FMMCL_SINGLE ? 1e-7 : 1e-14;
  return e > floor_ ? e : floor_;
}

/* g = sum_t K_t K_t^T (transpose 0) or sum_t K_t^T K_t (transpose 1), the
 * upper triangle computed and mirrored. Rows i come in blocks of GB so that
 * each row of K_t read from memory feeds GB dot products or updates: the
 * stack is 316 n^6 doubles (660 MB at n = 8), far beyond the caches, and
 * one row per pass made this memory-bound (about 100 s at n = 8 on 2 cores). */
#define GB 16
static void gram(int n3, const double *kt, int transpose, double *g) {
  memset(g, 0, sizeof *g * (size_t)n3 * n3);
  int nb = (n3 + GB - 1) / GB;
#pragma omp parallel for schedule(dynamic)
  for (int blk = 0; blk < nb; blk++) {
    int i0 = blk * GB, i1 = i0 + GB < n3 ? i0 + GB : n3;
    for (int t = 0; t < FMMCL_BBFMM_N_TRANSFER; t++) {
      const double *k = kt + (size_t)t * n3 * n3;
      if (!transpose) { /* g[i][j] += K_t[i] . K_t[j], j >= i0 */
        for (int j = i0; j < n3; j++) {
          const double *kj = k + (size_t)j * n3;
          for (int i = i0; i < i1 && i <= j; i++) {
            const double *ki = k + (size_t)i * n3;
            double s = 0;
            for (int c = 0; c < n3; c++) s += ki[c] * kj[c];
            g[(size_t)i * n3 + j] += s;
          }
        }
      } else { /* g[i][j] += sum_r K_t[r][i] K_t[r][j], j >= i0 */
        for (int r = 0; r < n3; r++) {
          const double *kr = k + (size_t)r * n3;
          for (int i = i0; i < i1; i++) {
            double kri = kr[i], *gi = g + (size_t)i * n3;
            for (int j = i; j < n3; j++) gi[j] += kri * kr[j];
          }
        }
      }
    }
  }
  for (int i = 0; i < n3; i++)
    for (int j = 0; j < i; j++) g[(size_t)i * n3 + j] = g[(size_t)j * n3 + i];
}

fmmcl_status fmmcl_bbfmm_m2l_compress(int n, double h, const double *kt, double eps, int symmetric,
                                      fmmcl_bbfmm_m2l *m) {
  int n3 = n * n * n;
  size_t nn = (size_t)n3 * n3;
  memset(m, 0, sizeof *m);
  double *g = malloc(nn * sizeof *g), *ev = malloc(nn * sizeof *ev), *w = malloc(n3 * sizeof *w);
  m->u = malloc(nn * sizeof *m->u);
  m->v = malloc(nn * sizeof *m->v);
  if (!g || !ev || !w || !m->u || !m->v) goto oom;
  m->n = n, m->h = h;
  for (int side = 0; side < 2; side++) {
    if (side == 1 && symmetric) { /* K_-t = K_t^T: the thin stack's Gram is the fat one's */
      memcpy(m->v, m->u, sizeof(double) * n3 * m->rank);
      break;
    }
    /* symmetric: sum_t K_t K_t^T = sum_t K_-t^T K_-t, the thin form, whose
     * inner loop is a multiply-add over contiguous memory */
    gram(n3, kt, symmetric ? 1 : side, g);
    if (fmmcl_symmetric_eigen(n3, g, w, ev)) goto oom;
    if (side == 0) {
      int r = 1;
      while (r < n3 && w[r] > eps * eps * w[0]) r++;
      m->rank = r;
    }
    double *dst = side ? m->v : m->u;
    for (int j = 0; j < m->rank; j++)
      for (int i = 0; i < n3; i++) dst[(size_t)j * n3 + i] = ev[(size_t)i * n3 + j];
  }
  int r = m->rank;
  m->c = malloc((size_t)FMMCL_BBFMM_N_TRANSFER * r * r * sizeof *m->c);
  if (!m->c) goto oom;
  int fail = 0;
  /* V and U as row-major n3 x r (node-major): the products below run as
   * contiguous multiply-adds over j, which the compiler vectorises (a dot
   * product's sum it may not reorder) */
  double *vr = malloc((size_t)n3 * r * sizeof *vr), *ur = malloc((size_t)n3 * r * sizeof *ur);
  if (!vr || !ur) {
    free(vr), free(ur);
    goto oom;
  }
  for (int j = 0; j < r; j++)
    for (int a = 0; a < n3; a++) {
      vr[(size_t)a * r + j] = m->v[(size_t)j * n3 + a];
      ur[(size_t)a * r + j] = m->u[(size_t)j * n3 + a];
    }
  /* symmetric: K_-t = K_t^T and V = U, so C_-t = C_t^T: half the products */
  int neg[FMMCL_BBFMM_N_TRANSFER];
  for (int t = 0; t < FMMCL_BBFMM_N_TRANSFER; t++) {
    int tv[3];
    fmmcl_bbfmm_transfer_vector(t, tv);
    neg[t] = symmetric ? fmmcl_bbfmm_transfer_index(-tv[0], -tv[1], -tv[2]) : t;
  }
#pragma omp parallel for schedule(dynamic)
  for (int t = 0; t < FMMCL_BBFMM_N_TRANSFER; t++) {
    if (neg[t] < t) continue; /* the transpose of one computed */
    double *tmp = calloc((size_t)n3 * r, sizeof *tmp), *cr = calloc((size_t)r * r, sizeof *cr);
    if (!tmp || !cr) {
      free(tmp), free(cr);
      fail = 1;
      continue;
    }
    const double *k = kt + (size_t)t * nn;
    for (int a = 0; a < n3; a++) { /* tmp = K_t V, row-major n3 x r */
      double *ta = tmp + (size_t)a * r;
      for (int b = 0; b < n3; b++) {
        double kab = k[(size_t)a * n3 + b];
        const double *vb = vr + (size_t)b * r;
        for (int j = 0; j < r; j++) ta[j] += kab * vb[j];
      }
    }
    for (int a = 0; a < n3; a++) { /* cr = U^T tmp, row-major r x r */
      const double *ta = tmp + (size_t)a * r, *ua = ur + (size_t)a * r;
      for (int i = 0; i < r; i++) {
        double uai = ua[i], *ci = cr + (size_t)i * r;
        for (int j = 0; j < r; j++) ci[j] += uai * ta[j];
      }
    }
    double *c = m->c + (size_t)t * r * r; /* column-major */
    for (int i = 0; i < r; i++)
      for (int j = 0; j < r; j++) c[(size_t)j * r + i] = cr[(size_t)i * r + j];
    free(tmp), free(cr);
  }
  free(vr), free(ur);
  for (int t = 0; t < FMMCL_BBFMM_N_TRANSFER; t++)
    if (neg[t] < t) {
      const double *src = m->c + (size_t)neg[t] * r * r;
      double *c = m->c + (size_t)t * r * r;
      for (int i = 0; i < r; i++)
        for (int j = 0; j < r; j++) c[(size_t)j * r + i] = src[(size_t)i * r + j];
    }
  if (fail) goto oom;
  free(g), free(ev), free(w);
  return FMMCL_SUCCESS;
oom:
  free(g), free(ev), free(w);
  fmmcl_bbfmm_m2l_free(m);
  return FMMCL_ERROR_OUT_OF_MEMORY;
}

void fmmcl_bbfmm_m2l_free(fmmcl_bbfmm_m2l *m) {
  free(m->u), free(m->v), free(m->c);
  memset(m, 0, sizeof *m);
}
