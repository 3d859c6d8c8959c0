/* laplace3d.h — the 3D Laplace pair interaction q/r and its gradient, the
 * one body every kernel that sums 1/r pairs expands (direct P2P, the FMM's
 * U list, the model's microbenchmark). Included with #include "kernels/laplace3d.h". */

/* Adds source s = (x, y, z, q) seen from target (tx, ty, tz) to pot and to
 * (gx, gy, gz), the gradient with respect to the target taken as
 * q (s - t) / r^3 (the force direction the host negates where it must).
 * eps2 is the softening squared (0 for none); RINV(r2) gives 1/r and is
 * where a kernel guards the singular pair (r = 0 contributes nothing):
 * LAPLACE3D_RINV_GUARDED, or LAPLACE3D_RINV_PLAIN where no pair can be
 * singular. 3 subtractions, 3 FMAs, one rsqrt, 2 multiplies, 4 FMA/adds. */
#define LAPLACE3D_PAIR(s, tx, ty, tz, eps2, RINV, pot, gx, gy, gz)          \
  {                                                                         \
    const REAL dx_ = (s).x - (tx), dy_ = (s).y - (ty), dz_ = (s).z - (tz);  \
    const REAL r2_ = fma(dx_, dx_, fma(dy_, dy_, fma(dz_, dz_, (eps2))));   \
    const REAL rinv_ = RINV(r2_);                                           \
    const REAL qr_ = (s).w * rinv_;                                         \
    const REAL qr3_ = qr_ * rinv_ * rinv_;                                  \
    (pot) += qr_;                                                           \
    (gx) = fma(qr3_, dx_, (gx));                                            \
    (gy) = fma(qr3_, dy_, (gy));                                            \
    (gz) = fma(qr3_, dz_, (gz));                                            \
  }
#define LAPLACE3D_RINV_GUARDED(r2) ((r2) > (REAL)0 ? RSQRT(r2) : (REAL)0)
#define LAPLACE3D_RINV_PLAIN(r2) RSQRT(r2)
