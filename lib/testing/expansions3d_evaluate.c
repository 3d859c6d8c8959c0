/* expansions3d_evaluate.c — L2P and M2P of the 3D Laplace reference: the
 * potential and its Cartesian gradient of an expansion at targets. */
#include "methods/laplace3d/expansions3d_coef.h"

/* Sums over m = -n..n of products of two m-symmetric sequences
 * (X^{-m} = (-1)^m conj X^m) are real and fold onto m >= 0 with weight 2
 * for m > 0. The gradient uses, for the scaled harmonics,
 *   d/dz R_n^m = R_{n-1}^m,        (d/dx + i d/dy) R_n^m = R_{n-1}^{m+1},
 *   d/dz I_n^m = -I_{n+1}^m,       (d/dx + i d/dy) I_n^m = I_{n+1}^{m+1},
 * and g = phi_x + i phi_y folds the m < 0 half with the symmetry by hand. */

static inline double fmmcl_exp3d_weight(int m) { return m == 0 ? 1.0 : 2.0; }

/* phi = sum conj(L_n^m) R_n^m(r). */
static double fmmcl_exp3d_local_potential(int p, const double *L, const double *R) {
  double phi = 0.0;
  for (int n = 0; n <= p; n++)
    for (int m = 0; m <= n; m++)
      phi += fmmcl_exp3d_weight(m) * creal(conj(fmmcl_exp3d_load(L, n, m)) * fmmcl_exp3d_load(R, n, m));
  return phi;
}

/* grad of sum conj(L_n^m) R_n^m(r):
 *   phi_z = sum conj(L_n^m) R_{n-1}^m,
 *   g = sum_{m=-n..n-2} conj(L_n^m) R_{n-1}^{m+1}
 *     = sum_{m=0..n-2} conj(L_n^m) R_{n-1}^{m+1} - sum_{k=1..n} L_n^k conj(R_{n-1}^{k-1}). */
static void fmmcl_exp3d_local_gradient(int p, const double *L, const double *R, double grad[3]) {
  double dz = 0.0;
  double complex g = 0.0;
  for (int n = 1; n <= p; n++) {
    for (int m = 0; m < n; m++)
      dz += fmmcl_exp3d_weight(m) * creal(conj(fmmcl_exp3d_load(L, n, m)) * fmmcl_exp3d_load(R, n - 1, m));
    for (int m = 0; m <= n - 2; m++) g += conj(fmmcl_exp3d_load(L, n, m)) * fmmcl_exp3d_load(R, n - 1, m + 1);
    for (int k = 1; k <= n; k++) g -= fmmcl_exp3d_load(L, n, k) * conj(fmmcl_exp3d_load(R, n - 1, k - 1));
  }
  grad[0] = creal(g);
  grad[1] = cimag(g);
  grad[2] = dz;
}

/* phi = sum conj(M_n^m) I_n^m(r). */
static double fmmcl_exp3d_multipole_potential(int p, const double *M, const double *S) {
  return fmmcl_exp3d_local_potential(p, M, S);
}

/* grad of sum conj(M_n^m) I_n^m(r), with S = I up to order p + 1:
 *   phi_z = -sum conj(M_n^m) I_{n+1}^m,
 *   g = sum_{m=0..n} conj(M_n^m) I_{n+1}^{m+1} - sum_{k=1..n} M_n^k conj(I_{n+1}^{k-1}). */
static void fmmcl_exp3d_multipole_gradient(int p, const double *M, const double *S, double grad[3]) {
  double dz = 0.0;
  double complex g = 0.0;
  for (int n = 0; n <= p; n++) {
    for (int m = 0; m <= n; m++) {
      const double complex cm = conj(fmmcl_exp3d_load(M, n, m));
      dz -= fmmcl_exp3d_weight(m) * creal(cm * fmmcl_exp3d_load(S, n + 1, m));
      g += cm * fmmcl_exp3d_load(S, n + 1, m + 1);
    }
    for (int k = 1; k <= n; k++) g -= fmmcl_exp3d_load(M, n, k) * conj(fmmcl_exp3d_load(S, n + 1, k - 1));
  }
  grad[0] = creal(g);
  grad[1] = cimag(g);
  grad[2] = dz;
}

/* Adds phi and grad at target i to the optional outputs. */
static void fmmcl_exp3d_add_result(size_t i, double phi, const double grad[3], double *pot,
                                   double *out_grad) {
  if (pot) pot[i] += phi;
  if (out_grad)
    for (int c = 0; c < 3; c++) out_grad[3 * i + c] += grad[c];
}

/* Both evaluations, target by target: the harmonics of r = x - center
 * (irregular for a multipole expansion E, one order more for the gradient;
 * regular for a local one), then the potential and gradient they give. */
static void fmmcl_exp3d_evaluate(int p, int multipole, const double center[3], const double *E, size_t n,
                                 const double *xyz, double *pot, double *grad) {
  double H[FMMCL_EXP3D_SCRATCH];
  for (size_t i = 0; i < n; i++) {
    const double r[3] = {xyz[3 * i] - center[0], xyz[3 * i + 1] - center[1], xyz[3 * i + 2] - center[2]};
    double g[3] = {0.0, 0.0, 0.0}, phi = 0.0;
    if (multipole) {
      fmmcl_exp3d_irregular(grad ? p + 1 : p, r, H);
      if (pot) phi = fmmcl_exp3d_multipole_potential(p, E, H);
      if (grad) fmmcl_exp3d_multipole_gradient(p, E, H, g);
    } else {
      fmmcl_exp3d_regular(p, r, H);
      if (pot) phi = fmmcl_exp3d_local_potential(p, E, H);
      if (grad) fmmcl_exp3d_local_gradient(p, E, H, g);
    }
    fmmcl_exp3d_add_result(i, phi, g, pot, grad);
  }
}

void fmmcl_exp3d_l2p(int p, const double center[3], const double *L, size_t n, const double *xyz, double *pot,
                     double *grad) {
  fmmcl_exp3d_evaluate(p, 0, center, L, n, xyz, pot, grad);
}

void fmmcl_exp3d_m2p(int p, const double center[3], const double *M, size_t n, const double *xyz, double *pot,
                     double *grad) {
  fmmcl_exp3d_evaluate(p, 1, center, M, n, xyz, pot, grad);
}
