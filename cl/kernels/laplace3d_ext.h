/* laplace3d_ext.h — the 3D Laplace pair with charges and dipoles, its
 * gradient and Hessian. Included with #include "kernels/laplace3d_ext.h". */

/* Source record (8 REALs): x, y, z, q, dx, dy, dz, 0. Results per target
 * (10): potential, gradient (3), Hessian xx, yy, zz, xy, xz, yz. */
#define LAPLACE3D_EXT_RECORD 8
#define LAPLACE3D_EXT_OUT 10

/* Adds charge q and dipole (dx, dy, dz) seen from the target (r = t - s,
 * ri = 1/|r|, or 0 for a pair to skip: every term carries a power of ri)
 * to acc: q / r and d . r / r^3, gradients and Hessians w.r.t. the target
 * (those of lib/reference/reference_ext.c). DIPOLES, GRADIENT and HESSIAN
 * (0 or 1) leave out what the plan does not ask for. The direct sum and the
 * FMM's near field (cl/laplace3d/fmm3d_p2p.cl) share it. */
static inline void laplace3d_ext_terms(REAL q, REAL dx, REAL dy, REAL dz, REAL rx, REAL ry, REAL rz, REAL ri,
                                       REAL *acc) {
  const REAL ri2 = ri * ri, ri3 = ri * ri2, ri5 = ri3 * ri2;
  acc[0] += q * ri;
#if GRADIENT || HESSIAN
  const REAL qr3 = q * ri3;
#endif
#if GRADIENT
  acc[1] -= qr3 * rx;
  acc[2] -= qr3 * ry;
  acc[3] -= qr3 * rz;
#endif
#if HESSIAN
  const REAL q3 = 3 * q * ri5;
  acc[4] += q3 * rx * rx - qr3;
  acc[5] += q3 * ry * ry - qr3;
  acc[6] += q3 * rz * rz - qr3;
  acc[7] += q3 * rx * ry;
  acc[8] += q3 * rx * rz;
  acc[9] += q3 * ry * rz;
#endif
#if DIPOLES
  const REAL rd = dx * rx + dy * ry + dz * rz;
  acc[0] += rd * ri3;
#if GRADIENT || HESSIAN
  const REAL rd5 = 3 * rd * ri5;
#endif
#if GRADIENT
  acc[1] += dx * ri3 - rd5 * rx;
  acc[2] += dy * ri3 - rd5 * ry;
  acc[3] += dz * ri3 - rd5 * rz;
#endif
#if HESSIAN
  /* -3 (d_a r_b + d_b r_a + delta_ab (d . r)) / r^5 + 15 (d . r) r_a r_b / r^7 */
  const REAL m3 = -3 * ri5, rd7 = 5 * rd5 * ri2;
  acc[4] += m3 * (2 * dx * rx + rd) + rd7 * rx * rx;
  acc[5] += m3 * (2 * dy * ry + rd) + rd7 * ry * ry;
  acc[6] += m3 * (2 * dz * rz + rd) + rd7 * rz * rz;
  acc[7] += m3 * (dx * ry + dy * rx) + rd7 * rx * ry;
  acc[8] += m3 * (dx * rz + dz * rx) + rd7 * rx * rz;
  acc[9] += m3 * (dy * rz + dz * ry) + rd7 * ry * rz;
#endif
#endif
}

/* Source record s (8 REALs) seen from the target, r2 = |r|^2 > 0. */
static inline void laplace3d_ext_pair(__local const REAL *s, REAL rx, REAL ry, REAL rz, REAL r2, REAL *acc) {
  laplace3d_ext_terms(s[3], s[4], s[5], s[6], rx, ry, rz, RSQRT(r2), acc);
}
