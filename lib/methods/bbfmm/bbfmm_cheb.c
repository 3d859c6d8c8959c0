/* bbfmm_cheb.c — Chebyshev nodes and the interpolation weights S_n of the
 * black-box FMM (Fong & Darve 2009, eq. 7). */
#include <math.h>

#include "methods/bbfmm/bbfmm.h"

#define PI 3.14159265358979323846

void fmmcl_bbfmm_nodes(int n, double *x) {
  for (int m = 0; m < n; m++) x[m] = cos((2 * m + 1) * PI / (2.0 * n));
}

void fmmcl_bbfmm_weights(int n, double x, double *w) {
  double t[FMMCL_BBFMM_MAX_ORDER];
  t[0] = 1;
  if (n > 1) t[1] = x;
  for (int k = 2; k < n; k++) t[k] = 2 * x * t[k - 1] - t[k - 2];
  for (int m = 0; m < n; m++) {
    double s = 0.5, th = (2 * m + 1) * PI / (2.0 * n);
    for (int k = 1; k < n; k++) s += cos(k * th) * t[k]; /* T_k(x_m) = cos(k theta_m) */
    w[m] = 2 * s / n;
  }
}

void fmmcl_bbfmm_child_table(int n, double *s) {
  double x[FMMCL_BBFMM_MAX_ORDER];
  fmmcl_bbfmm_nodes(n, x);
  for (int a = 0; a < 2; a++)
    for (int mc = 0; mc < n; mc++) {
      double w[FMMCL_BBFMM_MAX_ORDER];
      fmmcl_bbfmm_weights(n, (a ? 0.5 : -0.5) + 0.5 * x[mc], w);
      for (int m = 0; m < n; m++) s[(a * n + m) * n + mc] = w[m];
    }
}
