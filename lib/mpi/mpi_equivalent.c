/* mpi_equivalent.c — equivalent charges of a far cell: on a sphere of radius
 * a about its centre, at the nodes of a product rule (Gauss-Legendre in cos
 * theta, 2p+1 equal steps in phi) exact for harmonics of degree 2p, the
 * charges Q_k = w_k sum_{n<=p} sum_m M_n^m Y_n^m(k) / a^n reproduce the
 * sources' multipole moments M_n^m up to degree p exactly (addition theorem
 * and the rule's exactness), so their far field differs by O((a/d)^(p+1)). */
#include <math.h>
#include <stdlib.h>

#include "mpi_internal.h"

#define MAX_ORDER 40
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* Nodes and weights of the n-point Gauss-Legendre rule on [-1, 1]. */
static void gauss_legendre(int n, double *x, double *w) {
  for (int i = 0; i < n; i++) {
    double z = cos(M_PI * (i + 0.75) / (n + 0.5)), dp = 1;
    for (int it = 0; it < 100; it++) {
      double p0 = 1, p1 = 0;
      for (int k = 1; k <= n; k++) {
        double p2 = p1;
        p1 = p0;
        p0 = ((2.0 * k - 1) * z * p1 - (k - 1.0) * p2) / k;
      }
      dp = n * (z * p0 - p1) / (z * z - 1);
      double dz = p0 / dp;
      z -= dz;
      if (fabs(dz) < 1e-16) break;
    }
    x[i] = z;
    w[i] = 2 / ((1 - z * z) * dp * dp);
  }
}

static inline int lm(int n, int m) { return n * (n + 1) / 2 + m; }

/* Orthonormal associated Legendre functions: Y_n^m = P[lm(n,m)] e^{i m phi}. */
static void legendre(int p, double x, double s, double *P) {
  P[0] = sqrt(1 / (4 * M_PI));
  for (int m = 1; m <= p; m++) P[lm(m, m)] = -sqrt((2.0 * m + 1) / (2.0 * m)) * s * P[lm(m - 1, m - 1)];
  for (int m = 0; m < p; m++) P[lm(m + 1, m)] = sqrt(2.0 * m + 3) * x * P[lm(m, m)];
  for (int m = 0; m <= p; m++)
    for (int n = m + 2; n <= p; n++) {
      double a = sqrt((4.0 * n * n - 1) / ((double)n * n - (double)m * m));
      double b = sqrt(((n - 1.0) * (n - 1.0) - (double)m * m) / (4.0 * (n - 1.0) * (n - 1.0) - 1));
      P[lm(n, m)] = a * (x * P[lm(n - 1, m)] - b * P[lm(n - 2, m)]);
    }
}

void mpi_equivalent_points(int p, const double *c, double a, double *x) {
  double gx[MAX_ORDER + 1], gw[MAX_ORDER + 1];
  gauss_legendre(p + 1, gx, gw);
  size_t k = 0;
  for (int i = 0; i <= p; i++) {
    double s = sqrt(1 - gx[i] * gx[i]);
    for (int l = 0; l <= 2 * p; l++, k++) {
      double phi = 2 * M_PI * l / (2 * p + 1);
      x[3 * k] = c[0] + a * s * cos(phi);
      x[3 * k + 1] = c[1] + a * s * sin(phi);
      x[3 * k + 2] = c[2] + a * gx[i];
    }
  }
}

size_t mpi_equivalent_terms(int p) { return (size_t)lm(p, p) + 1; }

void mpi_equivalent_moments(int p, const double *c, double a, size_t n, const double *x, const double *q,
                            double *re, double *im) {
  double P[(MAX_ORDER + 1) * (MAX_ORDER + 2) / 2], cm[MAX_ORDER + 1], sm[MAX_ORDER + 1];
  size_t terms = mpi_equivalent_terms(p);
  for (size_t k = 0; k < terms; k++) re[k] = im[k] = 0;
  /* Moments scaled by a^-n: M_n^m / a^n = sum_j q_j (r_j/a)^n P_n^m e^{-i m phi_j}. */
  for (size_t j = 0; j < n; j++) {
    double dx = x[3 * j] - c[0], dy = x[3 * j + 1] - c[1], dz = x[3 * j + 2] - c[2];
    double r = sqrt(dx * dx + dy * dy + dz * dz), rho = sqrt(dx * dx + dy * dy);
    double ct = r > 0 ? dz / r : 1, st = r > 0 ? rho / r : 0, phi = atan2(dy, dx);
    double t = a > 0 ? r / a : 0, tn = q[j];
    legendre(p, ct, st, P);
    for (int m = 0; m <= p; m++) cm[m] = cos(m * phi), sm[m] = sin(m * phi);
    for (int nn = 0; nn <= p; nn++, tn *= t)
      for (int m = 0; m <= nn; m++) {
        re[lm(nn, m)] += tn * P[lm(nn, m)] * cm[m];
        im[lm(nn, m)] -= tn * P[lm(nn, m)] * sm[m];
      }
  }
}

void mpi_equivalent_from_moments(int p, const double *re, const double *im, double *out) {
  double P[(MAX_ORDER + 1) * (MAX_ORDER + 2) / 2], gx[MAX_ORDER + 1], gw[MAX_ORDER + 1];
  double sre[MAX_ORDER + 1], sim[MAX_ORDER + 1];
  gauss_legendre(p + 1, gx, gw);
  size_t k = 0;
  for (int i = 0; i <= p; i++) {
    legendre(p, gx[i], sqrt(1 - gx[i] * gx[i]), P);
    for (int m = 0; m <= p; m++) {
      sre[m] = sim[m] = 0;
      for (int nn = m; nn <= p; nn++)
        sre[m] += re[lm(nn, m)] * P[lm(nn, m)], sim[m] += im[lm(nn, m)] * P[lm(nn, m)];
    }
    double w = gw[i] * 2 * M_PI / (2 * p + 1);
    for (int l = 0; l <= 2 * p; l++, k++) {
      double phi = 2 * M_PI * l / (2 * p + 1), v = sre[0];
      for (int m = 1; m <= p; m++) v += 2 * (sre[m] * cos(m * phi) - sim[m] * sin(m * phi));
      out[k] = w * v;
    }
  }
}

/* Error model: like the treecode's cell-to-point criterion (fmm3d_order.c),
 * the relative L2 error of the far field of cells at radius / distance = t
 * measured as about 0.15 (0.7 theta)^(p+1) with theta the side over the
 * distance; with t = radius / distance, 0.7 theta is about 0.8 t; the
 * equivalent charges' own higher moments double it, and the gradient's
 * error is larger again: 1.0 (0.8 t)^(p+1) keeps the gradient within ten
 * times the tolerance on clustered input (tests/mpi_check.c). */
int mpi_equivalent_order(double a, double d, double eps) {
  if (a <= 0) return 0;
  double ratio = 0.8 * a / d;
  if (ratio >= 1) return MAX_ORDER;
  int p = (int)ceil(log(eps) / log(ratio)) - 1;
  return p < 0 ? 0 : p > MAX_ORDER ? MAX_ORDER : p;
}
