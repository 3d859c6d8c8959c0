/* expansions3d_ext.c — the 3D Laplace reference's dipole sources (P2M, P2L)
 * and Hessians (L2P, M2P), the plain-C counterparts of expansions3d.cl's
 * -DDIPOLES and -DHESSIAN code. */
#include "methods/laplace3d/expansions3d_coef.h"

/* X_n^m for any m, 0 where n is outside 0..top or |m| > n. */
static double complex any_or_zero(const double *X, int top, int n, int m) {
  return (n < 0 || n > top || abs(m) > n) ? 0 : fmmcl_exp3d_load_any(X, n, m);
}

/* X += sum_j d_j . grad_y H(y_j - center): with the scaled harmonics
 *   d . grad R_n^m = (dx - i dy)/2 R_{n-1}^{m+1} - (dx + i dy)/2 R_{n-1}^{m-1} + dz R_{n-1}^m,
 *   d . grad I_n^m = (dx - i dy)/2 I_{n+1}^{m+1} - (dx + i dy)/2 I_{n+1}^{m-1} - dz I_{n+1}^m. */
static void accumulate_dipoles(int p, const double center[3], size_t n, const double *xyz, const double *dip,
                               double *X, int irregular) {
  double H[FMMCL_EXP3D_SCRATCH];
  const int top = irregular ? p + 1 : p, dn = irregular ? 1 : -1;
  const double sz = irregular ? -1 : 1;
  for (size_t j = 0; j < n; j++) {
    const double y[3] = {xyz[3 * j] - center[0], xyz[3 * j + 1] - center[1], xyz[3 * j + 2] - center[2]};
    if (irregular) fmmcl_exp3d_irregular(top, y, H);
    else fmmcl_exp3d_regular(top, y, H);
    const double *d = dip + 3 * j;
    const double complex a = CMPLX(d[0], -d[1]) / 2, b = CMPLX(d[0], d[1]) / 2;
    for (int k = 0; k <= p; k++)
      for (int m = 0; m <= k; m++)
        fmmcl_exp3d_add(X, k, m,
                        a * any_or_zero(H, top, k + dn, m + 1) - b * any_or_zero(H, top, k + dn, m - 1) +
                            sz * d[2] * any_or_zero(H, top, k + dn, m));
  }
}

void fmmcl_exp3d_p2m_dipoles(int p, const double center[3], size_t n, const double *xyz, const double *dip,
                             double *M) {
  accumulate_dipoles(p, center, n, xyz, dip, M, 0);
}

void fmmcl_exp3d_p2l_dipoles(int p, const double center[3], size_t n, const double *xyz, const double *dip,
                             double *L) {
  accumulate_dipoles(p, center, n, xyz, dip, L, 1);
}

/* S(dn, dm) = sum over k and all m of conj(E_{k+dn}^{m-dm}) H_k^m, H of
 * orders 0..top: (d/dx + i d/dy) shifts (n, m) of R by (-1, +1) and of I
 * by (+1, +1), d/dz by (-1, 0) and (+1, 0) with the sign -1 for I, so
 * every second derivative of sum conj(E) H is one such sum. */
static double complex shifted_sum(int p, const double *E, const double *H, int top, int dn, int dm) {
  double complex s = 0;
  for (int k = 0; k <= top; k++)
    for (int m = -k; m <= k; m++)
      s += conj(any_or_zero(E, p, k + dn, m - dm)) * fmmcl_exp3d_load_any(H, k, m);
  return s;
}

/* hess[6i..] += (xx, yy, zz, xy, xz, yz) from zz = d_z^2 phi,
 * pz = (d_x + i d_y) d_z phi and pp = (d_x + i d_y)^2 phi = xx - yy + 2i xy
 * (xx + yy = -zz: phi is harmonic). */
static void add_hessian(double *h, double zz, double complex pz, double complex pp) {
  h[0] += (creal(pp) - zz) / 2;
  h[1] += (-creal(pp) - zz) / 2;
  h[2] += zz;
  h[3] += cimag(pp) / 2;
  h[4] += creal(pz);
  h[5] += cimag(pz);
}

void fmmcl_exp3d_l2p_hessian(int p, const double center[3], const double *L, size_t n, const double *xyz,
                             double *hess) {
  double H[FMMCL_EXP3D_SCRATCH];
  for (size_t i = 0; i < n; i++) {
    const double r[3] = {xyz[3 * i] - center[0], xyz[3 * i + 1] - center[1], xyz[3 * i + 2] - center[2]};
    fmmcl_exp3d_regular(p, r, H);
    add_hessian(hess + 6 * i, creal(shifted_sum(p, L, H, p, 2, 0)), shifted_sum(p, L, H, p, 2, 1),
                shifted_sum(p, L, H, p, 2, 2));
  }
}

void fmmcl_exp3d_m2p_hessian(int p, const double center[3], const double *M, size_t n, const double *xyz,
                             double *hess) {
  double H[FMMCL_EXP3D_SCRATCH];
  for (size_t i = 0; i < n; i++) {
    const double r[3] = {xyz[3 * i] - center[0], xyz[3 * i + 1] - center[1], xyz[3 * i + 2] - center[2]};
    fmmcl_exp3d_irregular(p + 2, r, H);
    add_hessian(hess + 6 * i, creal(shifted_sum(p, M, H, p + 2, -2, 0)), -shifted_sum(p, M, H, p + 2, -2, 1),
                shifted_sum(p, M, H, p + 2, -2, 2));
  }
}
