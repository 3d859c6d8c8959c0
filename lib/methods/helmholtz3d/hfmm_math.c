/* hfmm_math.c — special functions and translation operators of the 3D
 * Helmholtz FMM in double (hfmm_math.h); the device kernels evaluate the
 * same functions (cl/helmholtz3d/hfmm.cl) and apply these operators. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/helmholtz3d/hfmm_math.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

void hfmm_bessel_j(double complex z, double s, int nmax, double complex *out) {
  const double az = cabs(z);
  for (int n = 0; n <= nmax; n++) out[n] = 0;
  if (az == 0) {
    out[0] = 1;
    return;
  }
  if (az < 1) {
    /* j_n(z) = z^n / (2n+1)!! sum_j (-z^2/2)^j / (j! (2n+3)...(2n+2j+1)) */
    double complex c = 1;
    const double complex zs = z / s, h = -z * z / 2;
    for (int n = 0; n <= nmax; n++) {
      if (n > 0) c *= zs / (2 * n + 1);
      double complex t = 1, sum = 1;
      for (int j = 1; j < 30; j++) {
        t *= h / (j * (2.0 * n + 2 * j + 1));
        sum += t;
        if (cabs(t) < 1e-17 * cabs(sum)) break;
      }
      out[n] = c * sum;
    }
    return;
  }
  /* Miller: the minimal solution downward from far above, rescaled when it
   * grows, then normalised by whichever of j_0, j_1 is larger */
  const int top = nmax + 20 + (int)(2 * az);
  const double complex sz = s / z, s2 = s * s;
  double complex f1 = 0, f0 = 1e-30; /* f_{n+1}, f_n */
  for (int n = top; n > 0; n--) {
    double complex fm = (2 * n + 1) * sz * f0 - s2 * f1; /* f_{n-1} */
    f1 = f0;
    f0 = fm;
    if (n - 1 <= nmax) out[n - 1] = f0;
    if (n <= nmax) out[n] = f1;
    if (cabs(f0) > 1e150) {
      f0 *= 1e-150, f1 *= 1e-150;
      for (int j = n - 1; j <= nmax; j++)
        if (j >= 0) out[j] *= 1e-150;
    }
  }
  const double complex j0 = csin(z) / z, j1 = csin(z) / (z * z) - ccos(z) / z;
  const double complex c = cabs(j0) >= cabs(j1) || nmax < 1 ? j0 / out[0] : (j1 / s) / out[1];
  for (int n = 0; n <= nmax; n++) out[n] *= c;
}

void hfmm_hankel_h(double complex z, double s, int nmax, double complex *out) {
  const double complex e = cexp(I * z), sz = s / z;
  out[0] = -I * e * sz;
  if (nmax >= 1) out[1] = -e * (z + I) * sz * sz;
  for (int n = 1; n < nmax; n++) out[n + 1] = (2 * n + 1) * sz * out[n] - s * s * out[n - 1];
}

void hfmm_legendre(double x, double st, int nmax, double *P) {
  P[0] = 1 / sqrt(4 * M_PI);
  for (int m = 0; m <= nmax; m++) {
    if (m > 0) P[hfmm_lidx(m, m)] = -sqrt((2 * m + 1) / (2.0 * m)) * st * P[hfmm_lidx(m - 1, m - 1)];
    if (m + 1 <= nmax) P[hfmm_lidx(m + 1, m)] = sqrt(2 * m + 3.0) * x * P[hfmm_lidx(m, m)];
    for (int n = m + 2; n <= nmax; n++) {
      const double a = sqrt((4.0 * n * n - 1) / ((double)n * n - (double)m * m));
      const double b = sqrt(((n - 1.0) * (n - 1) - (double)m * m) / (4.0 * (n - 1) * (n - 1) - 1));
      P[hfmm_lidx(n, m)] = a * (x * P[hfmm_lidx(n - 1, m)] - b * P[hfmm_lidx(n - 2, m)]);
    }
  }
}

void hfmm_ylm(const double r[3], int nmax, double complex *Y) {
  const double rr = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
  const double rho = sqrt(r[0] * r[0] + r[1] * r[1]);
  const double x = rr > 0 ? r[2] / rr : 1, st = rr > 0 ? rho / rr : 0;
  const double complex eip = rho > 0 ? (r[0] + I * r[1]) / rho : 1;
  double *P = malloc(sizeof(double) * (size_t)hfmm_lidx(nmax + 1, 0));
  if (!P) return;
  hfmm_legendre(x, st, nmax, P);
  double complex em = 1;
  for (int m = 0; m <= nmax; m++) {
    for (int n = m; n <= nmax; n++) {
      const double complex y = P[hfmm_lidx(n, m)] * em;
      Y[hfmm_idx(n, m)] = y;
      if (m) Y[hfmm_idx(n, -m)] = (m & 1 ? -1 : 1) * conj(y);
    }
    em *= eip;
  }
  free(P);
}

void hfmm_gauss_legendre(int n, double *x, double *w) {
  for (int i = 0; i < n; i++) {
    double t = cos(M_PI * (i + 0.75) / (n + 0.5)), dp = 1;
    for (int it = 0; it < 100; it++) {
      double p0 = 1, p1 = t;
      for (int k = 2; k <= n; k++) {
        const double p2 = ((2 * k - 1) * t * p1 - (k - 1) * p0) / k;
        p0 = p1, p1 = p2;
      }
      if (n == 1) p1 = t, p0 = 1;
      dp = n * (t * p1 - p0) / (t * t - 1);
      const double dt = p1 / dp;
      t -= dt;
      if (fabs(dt) < 1e-16) break;
    }
    x[i] = t;
    w[i] = 2 / ((1 - t * t) * dp * dp);
  }
}

/* By quadrature on the sphere, exact for the degrees involved: p + 1
 * Gauss-Legendre nodes in cos theta times 2p + 2 angles; the entries are
 * real, so only Re(Y(R y) conj(Y(y))) is summed. */
static void wigner_quadrature(double theta, int p, double *d) {
  const int nt = p + 1, np = 2 * p + 2, nc = (p + 1) * (p + 1);
  double *gx = malloc(sizeof(double) * (size_t)nt), *gw = malloc(sizeof(double) * (size_t)nt);
  double complex *Yr = malloc(sizeof(double complex) * (size_t)nc),
                 *Y0 = malloc(sizeof(double complex) * (size_t)nc);
  double *re = malloc(sizeof(double) * (size_t)nc), *im = malloc(sizeof(double) * (size_t)nc);
  if (!gx || !gw || !Yr || !Y0 || !re || !im) goto done;
  memset(d, 0, sizeof(double) * (size_t)hfmm_dsize(p));
  hfmm_gauss_legendre(nt, gx, gw);
  const double c = cos(theta), sn = sin(theta);
  for (int i = 0; i < nt; i++)
    for (int j = 0; j < np; j++) {
      const double ph = 2 * M_PI * j / np, st = sqrt(fmax(0, 1 - gx[i] * gx[i]));
      const double y[3] = {st * cos(ph), st * sin(ph), gx[i]};
      const double ry[3] = {y[0] * c + y[2] * sn, y[1], -y[0] * sn + y[2] * c};
      hfmm_ylm(y, p, Y0);
      hfmm_ylm(ry, p, Yr);
      for (int k = 0; k < nc; k++) re[k] = creal(Y0[k]), im[k] = cimag(Y0[k]);
      const double w = gw[i] * 2 * M_PI / np;
      for (int n = 0; n <= p; n++) {
        double *blk = d + hfmm_dofs(n);
        const double *r0 = re + hfmm_idx(n, -n), *i0 = im + hfmm_idx(n, -n);
        for (int m = -n; m <= n; m++) {
          const double ar = w * creal(Yr[hfmm_idx(n, m)]), ai = w * cimag(Yr[hfmm_idx(n, m)]);
          double *row = blk + (m + n) * (2 * n + 1);
          for (int k = 0; k < 2 * n + 1; k++) row[k] += ar * r0[k] + ai * i0[k];
        }
      }
    }
done:
  free(gx), free(gw), free(Yr), free(Y0), free(re), free(im);
}

/* Past pi/2 by d_{m m'}(pi - theta) = (-1)^(n+m) d_{m,-m'}(theta), which
 * halves the distinct angles of a tree's translations. */
void hfmm_wigner_d(double theta, int p, double *d) {
  if (theta <= M_PI / 2) {
    wigner_quadrature(theta, p, d);
    return;
  }
  double *t = malloc(sizeof(double) * (size_t)hfmm_dsize(p));
  if (!t) return;
  wigner_quadrature(M_PI - theta, p, t);
  for (int n = 0; n <= p; n++)
    for (int m = -n; m <= n; m++)
      for (int mp = -n; mp <= n; mp++)
        d[hfmm_dofs(n) + (m + n) * (2 * n + 1) + mp + n] =
            ((n + m) & 1 ? -1 : 1) * t[hfmm_dofs(n) + (m + n) * (2 * n + 1) - mp + n];
  free(t);
}

static size_t gaunt_at(int p, int m, int n, int np, int l) {
  return ((size_t)hfmm_cofs(p, m) + (size_t)(n - m) * (size_t)(p + 1 - m) + (size_t)(np - m)) *
             (size_t)(2 * p + 1) +
         (size_t)l;
}

int hfmm_gaunt_init(hfmm_gaunt *g, int p) {
  g->p = p;
  g->g = calloc((size_t)hfmm_csize(p) * (size_t)(2 * p + 1), sizeof(double));
  const int nq = 2 * p + 2, L = 2 * p;
  double *x = malloc(sizeof(double) * (size_t)nq), *w = malloc(sizeof(double) * (size_t)nq);
  double *P = malloc(sizeof(double) * (size_t)nq * (size_t)hfmm_lidx(L + 1, 0));
  if (!g->g || !x || !w || !P) {
    free(x), free(w), free(P);
    hfmm_gaunt_free(g);
    return -1;
  }
  hfmm_gauss_legendre(nq, x, w);
  const size_t np_ = (size_t)hfmm_lidx(L + 1, 0);
  for (int q = 0; q < nq; q++) hfmm_legendre(x[q], sqrt(fmax(0, 1 - x[q] * x[q])), L, P + (size_t)q * np_);
#pragma omp parallel for schedule(dynamic)
  for (int m = 0; m <= p; m++)
    for (int n = m; n <= p; n++)
      for (int n2 = m; n2 <= p; n2++)
        for (int l = abs(n - n2); l <= n + n2; l += 2) {
          double sum = 0;
          for (int q = 0; q < nq; q++) {
            const double *Pq = P + (size_t)q * np_;
            sum += w[q] * Pq[hfmm_lidx(n, m)] * Pq[hfmm_lidx(n2, m)] * Pq[hfmm_lidx(l, 0)];
          }
          g->g[gaunt_at(p, m, n, n2, l)] = 2 * M_PI * sum;
        }
  free(x), free(w), free(P);
  return 0;
}

void hfmm_gaunt_free(hfmm_gaunt *g) {
  free(g->g);
  g->g = NULL;
}

void hfmm_coaxial(int kind, double complex k, double d, double s_in, double s_out, const hfmm_gaunt *g,
                  double complex *out) {
  const int p = g->p, L = 2 * p;
  double complex rad[2 * 64 + 2];
  /* the radial part scaled by the input's scale for L2L, the output's for M2M,
   * the level's for M2L (hfmm_math.h: every power left over is >= 0) */
  if (kind == HFMM_M2L) hfmm_hankel_h(k * d, s_in, L, rad);
  else hfmm_bessel_j(k * d, kind == HFMM_M2M ? s_out : s_in, L, rad);
  static const double complex ipow[4] = {1, I, -1, -I};
  for (int m = 0; m <= p; m++)
    for (int n = m; n <= p; n++)
      for (int n2 = m; n2 <= p; n2++) {
        double complex sum = 0;
        for (int l = abs(n - n2); l <= n + n2; l += 2) {
          double scale;
          if (kind == HFMM_M2L) scale = pow(s_in, n + n2 - l);
          else if (kind == HFMM_M2M) scale = pow(s_in / s_out, n2 + 1) * pow(s_out, l + n2 - n);
          else scale = pow(s_out / s_in, n) * pow(s_in, l + n - n2);
          const double c = 4 * M_PI * sqrt((2 * l + 1) / (4 * M_PI)) * g->g[gaunt_at(p, m, n, n2, l)];
          sum += ipow[((n + l - n2) % 4 + 4) % 4] * rad[l] * (c * scale);
        }
        out[hfmm_cofs(p, m) + (n - m) * (p + 1 - m) + (n2 - m)] = sum;
      }
}
