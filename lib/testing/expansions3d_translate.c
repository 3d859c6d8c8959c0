/* expansions3d_translate.c — M2M, M2L and L2L of the 3D Laplace reference:
 * each a convolution with the harmonics of the shift (see expansions3d.h). */
#include "methods/laplace3d/expansions3d_coef.h"

/* From R(a + b) = sum R_k^u(a) R_{n-k}^{m-u}(b), with d = from - to:
 *   M'_n^m = sum_{k=0..n} sum_u R_k^u(d) M_{n-k}^{m-u}.
 * Exact: the shifted truncated expansion needs no terms beyond order p. */
void fmmcl_exp3d_m2m(int p, const double from_center[3], const double *M_from, const double to_center[3],
                     double *M_to) {
  double R[FMMCL_EXP3D_SCRATCH];
  const double d[3] = {from_center[0] - to_center[0], from_center[1] - to_center[1],
                       from_center[2] - to_center[2]};
  fmmcl_exp3d_regular(p, d, R);
  for (int n = 0; n <= p; n++)
    for (int m = 0; m <= n; m++) {
      double complex sum = 0.0;
      for (int k = 0; k <= n; k++)
        for (int u = -k; u <= k; u++) {
          const int mu = m - u;
          if (mu < -(n - k) || mu > n - k) continue;
          sum += fmmcl_exp3d_load_any(R, k, u) * fmmcl_exp3d_load_any(M_from, n - k, mu);
        }
      fmmcl_exp3d_add(M_to, n, m, sum);
    }
}

/* From I_n^m(D + r) = sum_{j,k} (-1)^j conj(R_j^k(r)) I_{n+j}^{m+k}(D),
 * D = l_center - m_center:
 *   L_j^k = (-1)^j sum_{n=0..p} sum_m conj(M_n^m) I_{n+j}^{m+k}(D),
 * which needs I up to order 2p. */
void fmmcl_exp3d_m2l(int p, const double m_center[3], const double *M, const double l_center[3], double *L) {
  double S[FMMCL_EXP3D_SCRATCH];
  const double D[3] = {l_center[0] - m_center[0], l_center[1] - m_center[1], l_center[2] - m_center[2]};
  fmmcl_exp3d_irregular(2 * p, D, S);
  for (int j = 0; j <= p; j++)
    for (int k = 0; k <= j; k++) {
      double complex sum = 0.0;
      for (int n = 0; n <= p; n++)
        for (int m = -n; m <= n; m++)
          sum += conj(fmmcl_exp3d_load_any(M, n, m)) * fmmcl_exp3d_load_any(S, n + j, m + k);
      fmmcl_exp3d_add(L, j, k, (j & 1) ? -sum : sum);
    }
}

/* From R(r' + d) = sum R_k^u(r') R_{n-k}^{m-u}(d), d = to - from:
 *   L'_k^u = sum_{j=0..p-k} sum_v L_{k+j}^{u+v} conj(R_j^v(d)).
 * Exact: a degree-p polynomial re-expanded about another point. */
void fmmcl_exp3d_l2l(int p, const double from_center[3], const double *L_from, const double to_center[3],
                     double *L_to) {
  double R[FMMCL_EXP3D_SCRATCH];
  const double d[3] = {to_center[0] - from_center[0], to_center[1] - from_center[1],
                       to_center[2] - from_center[2]};
  fmmcl_exp3d_regular(p, d, R);
  for (int k = 0; k <= p; k++)
    for (int u = 0; u <= k; u++) {
      double complex sum = 0.0;
      for (int j = 0; j <= p - k; j++)
        for (int v = -j; v <= j; v++) {
          const int uv = u + v;
          if (uv < -(k + j) || uv > k + j) continue;
          sum += fmmcl_exp3d_load_any(L_from, k + j, uv) * conj(fmmcl_exp3d_load_any(R, j, v));
        }
      fmmcl_exp3d_add(L_to, k, u, sum);
    }
}
