/* expansions3d_harmonics.c — the scaled regular and irregular solid harmonics
 * R_n^m and I_n^m of expansions3d.h, by Cartesian recurrences. */
#include <math.h>

#include "methods/laplace3d/expansions3d_coef.h"

size_t fmmcl_exp3d_ncoef(int p) { return (size_t)(p + 1) * (size_t)(p + 2) / 2; }

size_t fmmcl_exp3d_index(int n, int m) { return fmmcl_exp3d_idx(n, m); }

/* Upward recurrence in n at fixed m is the stable direction for both
 * families (P_n^m is the dominant Legendre solution on [-1, 1]):
 *   (n+1-m)(n+1+m) R_{n+1}^m = (2n+1) z R_n^m - r^2 R_{n-1}^m
 *   R_m^m = -(x + iy) / (2m) R_{m-1}^{m-1}                                 */
void fmmcl_exp3d_regular(int p, const double x[3], double *R) {
  const double complex xy = CMPLX(x[0], x[1]);
  const double z = x[2];
  const double r2 = x[0] * x[0] + x[1] * x[1] + z * z;
  double complex diag = 1.0;
  for (int m = 0; m <= p; m++) {
    if (m > 0) diag *= -xy / (2.0 * m);
    fmmcl_exp3d_store(R, m, m, diag);
    double complex below = 0.0, here = diag;
    for (int n = m; n < p; n++) {
      double complex next =
          ((2 * n + 1) * z * here - r2 * below) / ((double)(n + 1 - m) * (double)(n + 1 + m));
      fmmcl_exp3d_store(R, n + 1, m, next);
      below = here;
      here = next;
    }
  }
}

/*   r^2 I_{n+1}^m = (2n+1) z I_n^m - (n+m)(n-m) I_{n-1}^m
 *   I_m^m = -(2m-1) (x + iy) / r^2 I_{m-1}^{m-1},   I_0^0 = 1/r            */
void fmmcl_exp3d_irregular(int p, const double x[3], double *S) {
  const double complex xy = CMPLX(x[0], x[1]);
  const double z = x[2];
  const double r2 = x[0] * x[0] + x[1] * x[1] + z * z;
  const double inv_r2 = 1.0 / r2;
  double complex diag = 1.0 / sqrt(r2);
  for (int m = 0; m <= p; m++) {
    if (m > 0) diag *= -(2 * m - 1) * xy * inv_r2;
    fmmcl_exp3d_store(S, m, m, diag);
    double complex below = 0.0, here = diag;
    for (int n = m; n < p; n++) {
      double complex next = ((2 * n + 1) * z * here - (double)(n + m) * (double)(n - m) * below) * inv_r2;
      fmmcl_exp3d_store(S, n + 1, m, next);
      below = here;
      here = next;
    }
  }
}
