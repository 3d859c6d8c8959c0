/* eigen.c — eigen-decomposition of a dense symmetric matrix on the host
 * (Householder tridiagonalisation and implicit QL). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linalg/linalg.h"

/* Householder reduction of the symmetric matrix in v (row-major n x n) to
 * tridiagonal form, accumulating the transformations in v: diagonal in d,
 * subdiagonal in e[1..n-1] (EISPACK tred2 as in JAMA). */
#define V_(i, j) v[(size_t)(i)*n + (j)]
static void tred2(int n, double *v, double *d, double *e) {
  for (int j = 0; j < n; j++) d[j] = V_(n - 1, j);
  for (int i = n - 1; i > 0; i--) {
    double scale = 0, h = 0;
    for (int k = 0; k < i; k++) scale += fabs(d[k]);
    if (scale == 0) {
      e[i] = d[i - 1];
      for (int j = 0; j < i; j++) {
        d[j] = V_(i - 1, j);
        V_(i, j) = 0;
        V_(j, i) = 0;
      }
    } else {
      for (int k = 0; k < i; k++) {
        d[k] /= scale;
        h += d[k] * d[k];
      }
      double f = d[i - 1], g = sqrt(h);
      if (f > 0) g = -g;
      e[i] = scale * g;
      h -= f * g;
      d[i - 1] = f - g;
      for (int j = 0; j < i; j++) e[j] = 0;
      for (int j = 0; j < i; j++) {
        f = d[j];
        V_(j, i) = f;
        g = e[j] + V_(j, j) * f;
        for (int k = j + 1; k <= i - 1; k++) {
          g += V_(k, j) * d[k];
          e[k] += V_(k, j) * f;
        }
        e[j] = g;
      }
      f = 0;
      for (int j = 0; j < i; j++) {
        e[j] /= h;
        f += e[j] * d[j];
      }
      double hh = f / (h + h);
      for (int j = 0; j < i; j++) e[j] -= hh * d[j];
      for (int j = 0; j < i; j++) {
        f = d[j];
        g = e[j];
        for (int k = j; k <= i - 1; k++) V_(k, j) -= f * e[k] + g * d[k];
        d[j] = V_(i - 1, j);
        V_(i, j) = 0;
      }
    }
    d[i] = h;
  }
  for (int i = 0; i < n - 1; i++) {
    V_(n - 1, i) = V_(i, i);
    V_(i, i) = 1;
    double h = d[i + 1];
    if (h != 0) {
      for (int k = 0; k <= i; k++) d[k] = V_(k, i + 1) / h;
      for (int j = 0; j <= i; j++) {
        double g = 0;
        for (int k = 0; k <= i; k++) g += V_(k, i + 1) * V_(k, j);
        for (int k = 0; k <= i; k++) V_(k, j) -= g * d[k];
      }
    }
    for (int k = 0; k <= i; k++) V_(k, i + 1) = 0;
  }
  for (int j = 0; j < n; j++) {
    d[j] = V_(n - 1, j);
    V_(n - 1, j) = 0;
  }
  V_(n - 1, n - 1) = 1;
  e[0] = 0;
}

/* Implicit QL on the tridiagonal (d, e), rotating v's columns: eigenvalues
 * in d, eigenvectors as v's columns (EISPACK tql2 as in JAMA). */
static void tql2(int n, double *v, double *d, double *e) {
  for (int i = 1; i < n; i++) e[i - 1] = e[i];
  e[n - 1] = 0;
  double f = 0, tst1 = 0, eps = ldexp(1.0, -52);
  for (int l = 0; l < n; l++) {
    tst1 = fmax(tst1, fabs(d[l]) + fabs(e[l]));
    int m = l;
    while (m < n && fabs(e[m]) > eps * tst1) m++;
    if (m == n) m = n - 1; /* e[n-1] = 0 stops it before: never */
    if (m > l) {
      for (int iter = 0; iter < 64; iter++) {
        double g = d[l], p = (d[l + 1] - g) / (2 * e[l]), r = hypot(p, 1.0);
        if (p < 0) r = -r;
        d[l] = e[l] / (p + r);
        d[l + 1] = e[l] * (p + r);
        double dl1 = d[l + 1], h = g - d[l];
        for (int i = l + 2; i < n; i++) d[i] -= h;
        f += h;
        p = d[m];
        double c = 1, c2 = c, c3 = c, el1 = e[l + 1], s = 0, s2 = 0;
        for (int i = m - 1; i >= l; i--) {
          c3 = c2;
          c2 = c;
          s2 = s;
          g = c * e[i];
          h = c * p;
          r = hypot(p, e[i]);
          e[i + 1] = s * r;
          s = e[i] / r;
          c = p / r;
          p = c * d[i] - s * g;
          d[i + 1] = h + s * (c * g + s * d[i]);
          for (int k = 0; k < n; k++) {
            h = V_(k, i + 1);
            V_(k, i + 1) = s * V_(k, i) + c * h;
            V_(k, i) = c * V_(k, i) - s * h;
          }
        }
        p = -s * s2 * c3 * el1 * e[l] / dl1;
        e[l] = s * p;
        d[l] = c * p;
        if (fabs(e[l]) <= eps * tst1) break;
      }
    }
    d[l] += f;
    e[l] = 0;
  }
}
#undef V_

/* Householder tridiagonalisation and implicit QL: about 3 d^3 flops, where
 * cyclic Jacobi took ~8 sweeps of 4 d^3 with strided access (16 s at
 * d = 512, the n = 8 Gram matrices). */
int fmmcl_symmetric_eigen(int d, const double *a, double *w, double *v) {
  double *e = malloc((size_t)(d > 0 ? d : 1) * sizeof *e);
  if (!e) return -1;
  memcpy(v, a, (size_t)d * d * sizeof *v);
  tred2(d, v, w, e);
  tql2(d, v, w, e);
  free(e);
  /* sort descending (selection sort: d <= 1000) */
  for (int i = 0; i < d; i++) {
    int b = i;
    for (int j = i + 1; j < d; j++)
      if (w[j] > w[b]) b = j;
    if (b != i) {
      double tw = w[i];
      w[i] = w[b], w[b] = tw;
      for (int r = 0; r < d; r++) {
        double tv = v[r * d + i];
        v[r * d + i] = v[r * d + b], v[r * d + b] = tv;
      }
    }
  }
  return 0;
}
