/* expansions2d.h — plain-C reference of the complex-series operators of the
 * 2D Laplace FMM (Greengard & Rokhlin), with coefficients scaled by the cell
 * side r so that they stay O(1) at every level, in float as in double.
 *
 * With F(z) = sum_j q_j log(z - s_j), z = x + iy, the potential is
 * phi = -Re F = -sum_j q_j log|z - s_j| and its gradient (-Re F', Im F').
 *   multipole about c:  F(z) = M_0 log(z - c) + sum_{k=1..p} M_k (r / (z - c))^k,
 *                       M_0 = sum q_j, M_k = -sum q_j ((s_j - c) / r)^k / k
 *   local about c:      F(z) = sum_{l=0..p} L_l ((z - c) / r)^l
 * Arrays hold p + 1 complex coefficients. Every operator adds to its output. */
#ifndef FMMCL_EXPANSIONS2D_H
#define FMMCL_EXPANSIONS2D_H

#include <complex.h>
#include <stddef.h>

/* Largest order the tables and kernels accept. */
#define FMMCL_EXP2D_MAX_ORDER 40

/* n points (x, y) with charges q into the multipole about c of scale r. */
void fmmcl_exp2d_p2m(int p, size_t n, const double *pts, const double *q, const double *c, double r,
                     double complex *M);
/* Child multipole (centre cc, scale rc) shifted to the parent (cp, rp). */
void fmmcl_exp2d_m2m(int p, const double complex *Mc, const double *cc, double rc, const double *cp,
                     double rp, double complex *Mp);
/* Multipole about cs into the local about ct, both of scale r. */
void fmmcl_exp2d_m2l(int p, const double complex *M, const double *cs, const double *ct, double r,
                     double complex *L);
/* Parent local (cp, rp) shifted to the child (cc, rc). */
void fmmcl_exp2d_l2l(int p, const double complex *Lp, const double *cp, double rp, const double *cc,
                     double rc, double complex *Lc);
/* Local about c at point x: adds to out[0] the potential, out[1..2] the gradient. */
void fmmcl_exp2d_l2p(int p, const double complex *L, const double *c, double r, const double *x, double *out);
/* Multipole about c at point x (far from c), as l2p. */
void fmmcl_exp2d_m2p(int p, const double complex *M, const double *c, double r, const double *x, double *out);
/* The M2L row table of m2l2d.cl, (p+1)^2 doubles: t[l][0] = -1/l (0 for
 * l = 0), t[l][k] = C(l+k-1, k-1) for k >= 1; the sign (-1)^k goes with the
 * shared factor M_k w^-k. */
void fmmcl_exp2d_m2l_row_table(int p, double *t);
/* Binomial coefficient C(n, k) in double (exact to n = 56). */
double fmmcl_exp2d_binomial(int n, int k);

#endif /* FMMCL_EXPANSIONS2D_H */
