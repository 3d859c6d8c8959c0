/* expansions3d_sources.c — P2M and P2L of the 3D Laplace reference: charges
 * to a multipole (sum of q R_n^m) or local (sum of q I_n^m) expansion. */
#include "methods/laplace3d/expansions3d_coef.h"

/* X += sum_j q_j H(y_j - center), H the regular or irregular harmonics. */
static void fmmcl_exp3d_accumulate_harmonics(int p, const double center[3], size_t n, const double *xyz,
                                             const double *q, double *X, int irregular) {
  double H[FMMCL_EXP3D_SCRATCH];
  const size_t len = 2 * fmmcl_exp3d_ncoef(p);
  for (size_t j = 0; j < n; j++) {
    const double d[3] = {xyz[3 * j] - center[0], xyz[3 * j + 1] - center[1], xyz[3 * j + 2] - center[2]};
    if (irregular) fmmcl_exp3d_irregular(p, d, H);
    else fmmcl_exp3d_regular(p, d, H);
    for (size_t k = 0; k < len; k++) X[k] += q[j] * H[k];
  }
}

void fmmcl_exp3d_p2m(int p, const double center[3], size_t n, const double *xyz, const double *q, double *M) {
  fmmcl_exp3d_accumulate_harmonics(p, center, n, xyz, q, M, 0);
}

void fmmcl_exp3d_p2l(int p, const double center[3], size_t n, const double *xyz, const double *q, double *L) {
  fmmcl_exp3d_accumulate_harmonics(p, center, n, xyz, q, L, 1);
}
