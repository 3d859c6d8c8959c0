/* expansions3d.h — plain-C reference of the spherical-harmonic expansion
 * operators of the 3D Laplace kernel 1/r (P2M, M2M, M2L, L2L, L2P, M2P, P2L).
 *
 * Normalisation (scaled solid harmonics; Condon-Shortley phase in P_n^m):
 *
 *   R_n^m(x) = r^n P_n^m(cos theta) e^{i m phi} / (n+m)!          regular
 *   I_n^m(x) = (n-m)! P_n^m(cos theta) e^{i m phi} / r^{n+1}      irregular
 *
 * with X_n^{-m} = (-1)^m conj(X_n^m) for both. This scaling makes every
 * translation a plain convolution with no numerical factors:
 *
 *   1/|x - y| = sum_{n,m} conj(R_n^m(y)) I_n^m(x)          |y| < |x|
 *   R_n^m(a + b) = sum_{k,u} R_k^u(a) R_{n-k}^{m-u}(b)
 *   I_n^m(x - a) = sum_{k,u} conj(R_k^u(a)) I_{n+k}^{m+u}(x)   |a| < |x|
 *
 * Both harmonics are computed by Cartesian recurrences (no trigonometry, no
 * division by sin theta), so points on the z axis and, for R, the centre
 * itself are fine.
 *
 * Expansions about a centre c, for charges q_j at y_j, potential
 * phi(x) = sum_j q_j / |x - y_j| (no 1/(4 pi), as in fmmcl.h):
 *
 *   multipole  M_n^m = sum_j q_j R_n^m(y_j - c),
 *              phi(x) = sum_{n,m} conj(M_n^m) I_n^m(x - c)     |x-c| > |y_j-c|
 *   local      L_n^m = sum_j q_j I_n^m(y_j - c),
 *              phi(x) = sum_{n,m} conj(L_n^m) R_n^m(x - c)     |x-c| < |y_j-c|
 *
 * summed over n = 0..p, m = -n..n. Only m >= 0 is stored: coefficient
 * (n, m) is complex number n(n+1)/2 + m, kept as interleaved doubles
 * (re at 2k, im at 2k+1), so an expansion of order p is
 * 2 * fmmcl_exp3d_ncoef(p) doubles. Gradients are Cartesian,
 * (d/dx, d/dy, d/dz) of phi at the target, interleaved per target.
 *
 * Every operator adds to its output, so contributions from many sources
 * or cells accumulate; zero the output first. Orders 0..FMMCL_EXP3D_MAX_ORDER
 * are supported (callers check p; these functions neither allocate nor fail).
 * Truncation errors of a well-separated pair fall like (r/R)^(p+1), r the
 * cluster radius and R the distance from the centre.
 */
#ifndef FMMCL_EXPANSIONS3D_H
#define FMMCL_EXPANSIONS3D_H

#include <stddef.h>

/* Scratch arrays live on the stack; M2L needs harmonics of order 2p. */
#define FMMCL_EXP3D_MAX_ORDER 40

/* Complex coefficients of an expansion of order p: (p+1)(p+2)/2. */
size_t fmmcl_exp3d_ncoef(int p);
/* Index of coefficient (n, m), 0 <= m <= n, among them. */
size_t fmmcl_exp3d_index(int n, int m);

/* ---- particles to expansions ------------------------------------------ */

/* M about center += multipole of n charges q at xyz (interleaved x,y,z). */
void fmmcl_exp3d_p2m(int p, const double center[3], size_t n, const double *xyz, const double *q, double *M);
/* L about center += local expansion of n charges q at xyz, all of them
 * farther from center than the targets that L will be evaluated at. */
void fmmcl_exp3d_p2l(int p, const double center[3], size_t n, const double *xyz, const double *q, double *L);

/* ---- translations (exact for the truncated M2M and L2L) ----------------- */

/* M_to += M_from shifted from from_center to to_center (child to parent). */
void fmmcl_exp3d_m2m(int p, const double from_center[3], const double *M_from, const double to_center[3],
                     double *M_to);
/* L += local expansion about l_center of multipole M about m_center. */
void fmmcl_exp3d_m2l(int p, const double m_center[3], const double *M, const double l_center[3], double *L);
/* L_to += L_from re-expanded about to_center (parent to child). */
void fmmcl_exp3d_l2l(int p, const double from_center[3], const double *L_from, const double to_center[3],
                     double *L_to);

/* ---- expansions to targets -------------------------------------------- */

/* pot[i] += phi(x_i) and grad[3i..3i+2] += grad phi(x_i) for n targets xyz;
 * pot or grad may be NULL to skip it. */
void fmmcl_exp3d_l2p(int p, const double center[3], const double *L, size_t n, const double *xyz, double *pot,
                     double *grad);
void fmmcl_exp3d_m2p(int p, const double center[3], const double *M, size_t n, const double *xyz, double *pot,
                     double *grad);

/* ---- dipoles and Hessians (lib/testing/expansions3d_ext.c) --------------- */

/* M (L) += the multipole (local) expansion of n dipoles dip (3 per source,
 * potential d . (x - y) / |x - y|^3) at xyz: d . grad_y of a charge's. */
void fmmcl_exp3d_p2m_dipoles(int p, const double center[3], size_t n, const double *xyz, const double *dip,
                             double *M);
void fmmcl_exp3d_p2l_dipoles(int p, const double center[3], size_t n, const double *xyz, const double *dip,
                             double *L);
/* hess[6i..6i+5] += (xx, yy, zz, xy, xz, yz) of the expansion's field at target i. */
void fmmcl_exp3d_l2p_hessian(int p, const double center[3], const double *L, size_t n, const double *xyz,
                             double *hess);
void fmmcl_exp3d_m2p_hessian(int p, const double center[3], const double *M, size_t n, const double *xyz,
                             double *hess);

/* ---- solid harmonics (shared by the operators above) -------------------- */

/* R_n^m(x), n = 0..p, m = 0..n, as interleaved complex at fmmcl_exp3d_index. */
void fmmcl_exp3d_regular(int p, const double x[3], double *R);
/* I_n^m(x) likewise (S for singular: I is taken by complex.h); x != 0. */
void fmmcl_exp3d_irregular(int p, const double x[3], double *S);

#endif /* FMMCL_EXPANSIONS3D_H */
