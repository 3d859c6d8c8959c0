/* expansions3d_coef.h — private helpers of the 3D expansion reference: read
 * and accumulate complex coefficients kept as interleaved doubles. */
#ifndef FMMCL_EXPANSIONS3D_COEF_H
#define FMMCL_EXPANSIONS3D_COEF_H

#include <complex.h>
#include <stdlib.h>

#include "methods/laplace3d/expansions3d.h"

/* Index of (n, m) for m >= 0, inline so inner loops need no call. */
static inline size_t fmmcl_exp3d_idx(int n, int m) { return (size_t)n * (size_t)(n + 1) / 2 + (size_t)m; }

/* X_n^m for 0 <= m <= n. */
static inline double complex fmmcl_exp3d_load(const double *X, int n, int m) {
  size_t k = fmmcl_exp3d_idx(n, m);
  return CMPLX(X[2 * k], X[2 * k + 1]);
}

/* X_n^m for any |m| <= n: only m >= 0 is stored, and
 * X_n^{-m} = (-1)^m conj(X_n^m) for every expansion and harmonic here. */
static inline double complex fmmcl_exp3d_load_any(const double *X, int n, int m) {
  if (m >= 0) return fmmcl_exp3d_load(X, n, m);
  double complex z = conj(fmmcl_exp3d_load(X, n, -m));
  return (m & 1) ? -z : z;
}

static inline void fmmcl_exp3d_store(double *X, int n, int m, double complex z) {
  size_t k = fmmcl_exp3d_idx(n, m);
  X[2 * k] = creal(z);
  X[2 * k + 1] = cimag(z);
}

static inline void fmmcl_exp3d_add(double *X, int n, int m, double complex z) {
  size_t k = fmmcl_exp3d_idx(n, m);
  X[2 * k] += creal(z);
  X[2 * k + 1] += cimag(z);
}

/* Doubles in a scratch array that holds harmonics up to order 2 * max. */
#define FMMCL_EXP3D_SCRATCH ((2 * FMMCL_EXP3D_MAX_ORDER + 1) * (2 * FMMCL_EXP3D_MAX_ORDER + 2))

#endif /* FMMCL_EXPANSIONS3D_COEF_H */
