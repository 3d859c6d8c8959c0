/* expansions2d.c — plain-C reference of the 2D complex-series operators
 * (P2M, M2M, M2L, L2L, L2P, M2P); formulas in expansions2d.h. */
#include <math.h>

#include "methods/laplace2d/expansions2d.h"

static double complex point(const double *x) { return x[0] + I * x[1]; }

/* pw[k] = z^k for k = 0..n, by repeated multiplication (cpow is slow and
 * no more accurate at these orders). */
static void powers(double complex z, int n, double complex *pw) {
  pw[0] = 1;
  for (int k = 1; k <= n; k++) pw[k] = pw[k - 1] * z;
}

double fmmcl_exp2d_binomial(int n, int k) {
  if (k < 0 || k > n) return 0;
  double c = 1;
  for (int i = 1; i <= k; i++) c = c * (n - k + i) / i;
  return round(c);
}

void fmmcl_exp2d_m2l_row_table(int p, double *t) {
  for (int l = 0; l <= p; l++) {
    t[l * (p + 1)] = l == 0 ? 0.0 : -1.0 / l;
    for (int k = 1; k <= p; k++) t[l * (p + 1) + k] = fmmcl_exp2d_binomial(l + k - 1, k - 1);
  }
}

void fmmcl_exp2d_p2m(int p, size_t n, const double *pts, const double *q, const double *c, double r,
                     double complex *M) {
  for (size_t j = 0; j < n; j++) {
    double complex z = (point(pts + 2 * j) - point(c)) / r, zk = 1;
    M[0] += q[j];
    for (int k = 1; k <= p; k++) {
      zk *= z;
      M[k] -= q[j] * zk / k;
    }
  }
}

/* Greengard-Rokhlin lemma 2.3 with u = (cc - cp) / rp, rho = rc / rp:
 * Mp_l += -M_0 u^l / l + sum_{k=1..l} Mc_k rho^k u^(l-k) C(l-1, k-1). */
void fmmcl_exp2d_m2m(int p, const double complex *Mc, const double *cc, double rc, const double *cp,
                     double rp, double complex *Mp) {
  double complex u[FMMCL_EXP2D_MAX_ORDER + 1];
  powers((point(cc) - point(cp)) / rp, p, u);
  const double rho = rc / rp;
  Mp[0] += Mc[0];
  for (int l = 1; l <= p; l++) {
    double complex s = -Mc[0] * u[l] / l;
    for (int k = 1; k <= l; k++) s += Mc[k] * pow(rho, k) * u[l - k] * fmmcl_exp2d_binomial(l - 1, k - 1);
    Mp[l] += s;
  }
}

/* Lemma 2.4 with w = (cs - ct) / r:
 *   L_0 += M_0 log|cs - ct| + sum_k (-1)^k M_k w^-k          (Re F only needs log|.|)
 *   L_l += w^-l (-M_0 / l + sum_k (-1)^k C(l+k-1, k-1) M_k w^-k). */
void fmmcl_exp2d_m2l(int p, const double complex *M, const double *cs, const double *ct, double r,
                     double complex *L) {
  const double complex w = (point(cs) - point(ct)) / r;
  double complex winv[FMMCL_EXP2D_MAX_ORDER + 1];
  powers(1 / w, p, winv);
  for (int l = 0; l <= p; l++) {
    double complex s = l == 0 ? 0 : -M[0] / l;
    double binom = 1; /* C(l+k-1, k-1), by its recurrence in k */
    for (int k = 1; k <= p; k++) {
      s += (k % 2 ? -binom : binom) * M[k] * winv[k];
      binom = binom * (l + k) / k;
    }
    s *= winv[l];
    if (l == 0) s += M[0] * log(cabs(w) * r);
    L[l] += s;
  }
}

/* Lemma 2.5 with v = (cc - cp) / rp, rho = rc / rp:
 * Lc_m += rho^m sum_{l=m..p} Lp_l C(l, m) v^(l-m). */
void fmmcl_exp2d_l2l(int p, const double complex *Lp, const double *cp, double rp, const double *cc,
                     double rc, double complex *Lc) {
  double complex v[FMMCL_EXP2D_MAX_ORDER + 1];
  powers((point(cc) - point(cp)) / rp, p, v);
  const double rho = rc / rp;
  for (int m = 0; m <= p; m++) {
    double complex s = 0;
    for (int l = m; l <= p; l++) s += Lp[l] * fmmcl_exp2d_binomial(l, m) * v[l - m];
    Lc[m] += pow(rho, m) * s;
  }
}

/* phi = -Re F, grad phi = (-Re F', Im F'). */
static void add_field(double complex F, double complex dF, double *out) {
  out[0] -= creal(F);
  out[1] -= creal(dF);
  out[2] += cimag(dF);
}

void fmmcl_exp2d_l2p(int p, const double complex *L, const double *c, double r, const double *x,
                     double *out) {
  const double complex z = (point(x) - point(c)) / r;
  double complex F = 0, dF = 0;
  for (int l = p; l >= 0; l--) {
    dF = dF * z + F;
    F = F * z + L[l];
  }
  add_field(F, dF / r, out);
}

void fmmcl_exp2d_m2p(int p, const double complex *M, const double *c, double r, const double *x,
                     double *out) {
  const double complex d = point(x) - point(c), zinv = r / d;
  double complex F = M[0] * clog(d), dF = M[0] / d, zk = 1;
  for (int k = 1; k <= p; k++) {
    zk *= zinv;
    F += M[k] * zk;
    dF -= k * M[k] * zk / d;
  }
  add_field(F, dF, out);
}
