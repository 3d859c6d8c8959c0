/* stokes3d.h — the 3D Stokeslet and stresslet pairs (unnormalised) and
 * their pressures. Included with #include "kernels/stokes3d.h". */

/* Source record (12 REALs): x, y, z, f (3), stresslet strength s (3) and
 * orientation n (3). Results per target (4): velocity (3), pressure. */
#define STOKES3D_RECORD 12
#define STOKES3D_OUT 4

/* Adds source record s seen from target t (r = t - s, r2 > 0) to acc, as
 * lib/reference/reference_ext.c: f / r + r (r . f) / r^3, pressure
 * 2 (r . f) / r^3; stresslet -6 r (r . s)(r . n) / r^5, pressure
 * 4 (s . n) / r^3 - 12 (r . s)(r . n) / r^5. */
static inline void stokes3d_pair(__local const REAL *src, REAL rx, REAL ry, REAL rz, REAL r2, REAL *acc) {
  const REAL ri = RSQRT(r2), ri3 = ri * ri * ri;
  const REAL fx = src[3], fy = src[4], fz = src[5];
  const REAL rf = fx * rx + fy * ry + fz * rz, rf3 = rf * ri3;
  acc[0] += fx * ri + rx * rf3;
  acc[1] += fy * ri + ry * rf3;
  acc[2] += fz * ri + rz * rf3;
#if PRESSURE
  acc[3] += 2 * rf3;
#endif
#if STRESSLETS
  const REAL sx = src[6], sy = src[7], sz = src[8], nx = src[9], ny = src[10], nz = src[11];
  const REAL rs = sx * rx + sy * ry + sz * rz, rn = nx * rx + ny * ry + nz * rz;
  const REAL t = rs * rn * ri3 * ri * ri; /* (r . s)(r . n) / r^5 */
  acc[0] -= 6 * rx * t;
  acc[1] -= 6 * ry * t;
  acc[2] -= 6 * rz * t;
#if PRESSURE
  acc[3] += 4 * (sx * nx + sy * ny + sz * nz) * ri3 - 12 * t;
#endif
#endif
}
