/* yukawa3d.h — the 3D Yukawa (screened Coulomb) pair interaction
 * q exp(-kappa r) / r and its gradient. Included with #include "kernels/yukawa3d.h". */

/* Adds source s = (x, y, z, q) seen from target (tx, ty, tz) to pot and to
 * (gx, gy, gz), the gradient with respect to the target,
 * q exp(-kappa rho) (1 + kappa rho) (s - t) / rho^3 with rho^2 = r^2 + eps2
 * (the sign convention of LAPLACE3D_PAIR, which this is at kappa = 0).
 * RINV(r2) gives 1/rho and guards the singular pair as in laplace3d.h: a
 * guarded 1/rho of 0 makes rho 0 and the exponential 1, so the pair adds
 * exactly 0. One rsqrt and one exp per pair. */
#define YUKAWA3D_PAIR(s, tx, ty, tz, eps2, kappa, RINV, pot, gx, gy, gz)   \
  {                                                                         \
    const REAL dx_ = (s).x - (tx), dy_ = (s).y - (ty), dz_ = (s).z - (tz);  \
    const REAL r2_ = fma(dx_, dx_, fma(dy_, dy_, fma(dz_, dz_, (eps2))));   \
    const REAL rinv_ = RINV(r2_);                                           \
    const REAL r_ = r2_ * rinv_;                                            \
    const REAL qr_ = (s).w * rinv_ * EXP(-(kappa) * r_);                    \
    const REAL qr3_ = qr_ * fma((kappa), r_, (REAL)1) * rinv_ * rinv_;      \
    (pot) += qr_;                                                           \
    (gx) = fma(qr3_, dx_, (gx));                                            \
    (gy) = fma(qr3_, dy_, (gy));                                            \
    (gz) = fma(qr3_, dz_, (gz));                                            \
  }
