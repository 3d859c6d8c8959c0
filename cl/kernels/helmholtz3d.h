/* helmholtz3d.h — the 3D Helmholtz pair exp(ikr)/r, complex k with Im k >= 0,
 * with complex charges and dipoles. Included with #include "kernels/helmholtz3d.h". */

/* Source record (12 REALs): x, y, z, q (re, im), d (re x, im x, re y, im y,
 * re z, im z), 0. Results per target (8): potential (re, im), gradient
 * (re x, im x, re y, im y, re z, im z). */
#define HELMHOLTZ3D_RECORD 12
#define HELMHOLTZ3D_OUT 8

/* Adds source record s seen from target t (r = t - s, r2 > 0) to acc, as
 * lib/reference/reference_ext.c: q G with G = e / r, e = exp(ikr); its
 * gradient q A r, A = e (ikr - 1) / r^3; a dipole -A (d . r) and its
 * gradient -(A d + B r (d . r)), B = e (3 - 3ikr - k^2 r^2) / r^5. */
static inline void helmholtz3d_pair(__local const REAL *s, REAL rx, REAL ry, REAL rz, REAL r2, REAL kr, REAL ki,
                             REAL *acc) {
  const REAL ri = RSQRT(r2), r = r2 * ri;
  REAL c;
  const REAL sn = sincos(kr * r, &c);
  const REAL decay = EXP(-ki * r);
  const REAL er = decay * c, ei = decay * sn; /* e = exp(ikr) */
  const REAL ikr_r = -ki * r, ikr_i = kr * r; /* ikr */
  /* A r^3 = e (ikr - 1) */
  const REAL ri3 = ri * ri * ri;
  const REAL ar = (er * (ikr_r - 1) - ei * ikr_i) * ri3, ai = (er * ikr_i + ei * (ikr_r - 1)) * ri3;
  const REAL qr = s[3], qi = s[4];
  acc[0] += (qr * er - qi * ei) * ri;
  acc[1] += (qr * ei + qi * er) * ri;
#if GRADIENT
  const REAL qar = qr * ar - qi * ai, qai = qr * ai + qi * ar;
  acc[2] += qar * rx;
  acc[3] += qai * rx;
  acc[4] += qar * ry;
  acc[5] += qai * ry;
  acc[6] += qar * rz;
  acc[7] += qai * rz;
#endif
#if DIPOLES
  const REAL dxr = s[5], dxi = s[6], dyr = s[7], dyi = s[8], dzr = s[9], dzi = s[10];
  const REAL drr = dxr * rx + dyr * ry + dzr * rz, dri = dxi * rx + dyi * ry + dzi * rz;
  acc[0] -= ar * drr - ai * dri;
  acc[1] -= ar * dri + ai * drr;
#if GRADIENT
  /* B r^5 = e (3 - 3ikr + (ikr)^2) */
  const REAL pr = 3 - 3 * ikr_r + ikr_r * ikr_r - ikr_i * ikr_i, pi = -3 * ikr_i + 2 * ikr_r * ikr_i;
  const REAL ri5 = ri3 * ri * ri;
  const REAL br = (er * pr - ei * pi) * ri5, bi = (er * pi + ei * pr) * ri5;
  const REAL bdr = br * drr - bi * dri, bdi = br * dri + bi * drr; /* B (d . r) */
  acc[2] -= ar * dxr - ai * dxi + bdr * rx;
  acc[3] -= ar * dxi + ai * dxr + bdi * rx;
  acc[4] -= ar * dyr - ai * dyi + bdr * ry;
  acc[5] -= ar * dyi + ai * dyr + bdi * ry;
  acc[6] -= ar * dzr - ai * dzi + bdr * rz;
  acc[7] -= ar * dzi + ai * dzr + bdi * rz;
#endif
#endif
}
