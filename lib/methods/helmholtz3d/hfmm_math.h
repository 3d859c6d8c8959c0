/* hfmm_math.h — the special functions and translation operators of the 3D
 * Helmholtz FMM, in double on the host: scaled spherical Bessel and Hankel
 * functions, normalised spherical harmonics, and the rotation and coaxial
 * translation matrices the device applies. */
#ifndef FMMCL_HFMM_MATH_H
#define FMMCL_HFMM_MATH_H

#include <complex.h>

/* Coefficient (n, m), |m| <= n, of an expansion of order p: n^2 + n + m,
 * (p + 1)^2 in all. Legendre values (m >= 0): n (n + 1) / 2 + m. */
static inline int hfmm_idx(int n, int m) { return n * n + n + m; }
static inline int hfmm_lidx(int n, int m) { return n * (n + 1) / 2 + m; }

/* Scaled radial functions for n = 0..nmax with scale s > 0:
 * out[n] = j_n(z) / s^n (regular), h_n(z) s^(n+1) (outgoing, h = h^(1)).
 * j by its series for |z| < 1 and Miller's downward recurrence above;
 * h by the upward recurrence (z != 0). */
void hfmm_bessel_j(double complex z, double s, int nmax, double complex *out);
void hfmm_hankel_h(double complex z, double s, int nmax, double complex *out);

/* Orthonormal Legendre functions with the Condon-Shortley phase,
 * Y_n^m = P[lidx(n, m)](cos theta) e^(i m phi), Y_n^-m = (-1)^m conj(Y_n^m). */
void hfmm_legendre(double x, double sin_theta, int nmax, double *P);
/* Y_n^m(r / |r|) for n <= nmax, all m, at idx(n, m) (r = 0: the pole). */
void hfmm_ylm(const double r[3], int nmax, double complex *Y);

/* Gauss-Legendre nodes and weights on [-1, 1]. */
void hfmm_gauss_legendre(int n, double *x, double *w);

/* Rotation about y by theta: Y_n^m(R_y(theta) y) = sum_m' d[n][m][m'] Y_n^m'(y);
 * block n at hfmm_dofs(n), (2n+1)^2 reals row m, column m'. */
static inline int hfmm_dofs(int n) { return n * (4 * n * n - 1) / 3; }
static inline int hfmm_dsize(int p) { return hfmm_dofs(p + 1); }
void hfmm_wigner_d(double theta, int p, double *d);

/* The Gaunt integrals of the coaxial translations, G(n', n, l, m) =
 * int Y_n'^m conj(Y_n^m) Y_l^0 (m >= 0): a table for order p. */
typedef struct hfmm_gaunt {
  int p;
  double *g; /* [m][n - m][n' - m][l], l = 0..2p */
} hfmm_gaunt;
int hfmm_gaunt_init(hfmm_gaunt *g, int p); /* 0 on success, -1 out of memory */
void hfmm_gaunt_free(hfmm_gaunt *g);

/* Coaxial translation along +z by distance d of the scaled expansions:
 *   M2M (S|S): child multipole (scale s_in) to parent (s_out),
 *   M2L (S|R): multipole to local at one level (s_in = s_out),
 *   L2L (R|R): parent local (s_in) to child (s_out).
 * out[m][n - m][n' - m] for m = 0..p at hfmm_cofs(p, m): the coefficient of
 * input (n', m) in output (n, m); the same for -m. */
enum { HFMM_M2M, HFMM_M2L, HFMM_L2L };
static inline int hfmm_cofs(int p, int m) {
  /* sum over m' < m of (p + 1 - m')^2 */
  int s = 0;
  for (int j = 0; j < m; j++) s += (p + 1 - j) * (p + 1 - j);
  return s;
}
static inline int hfmm_csize(int p) { return hfmm_cofs(p, p + 1); }
void hfmm_coaxial(int kind, double complex k, double d, double s_in, double s_out, const hfmm_gaunt *g,
                  double complex *out);

#endif /* FMMCL_HFMM_MATH_H */
