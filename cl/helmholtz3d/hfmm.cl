/* hfmm.cl — the 3D Helmholtz FMM on the device: scaled spherical-wave
 * expansions (multipole in h_n(kr) Y_n^m, local in j_n(kr) Y_n^m; see
 * lib/methods/helmholtz3d/hfmm_math.h), points to expansions (P2M, P2L),
 * expansions to points (L2P, M2P), translations by rotation to z, coaxial
 * shift and rotation back (M2M, L2L a pair at a time; M2L in batches of
 * target cells sharing each direction's operators) with host-made
 * operators, and the near field (P2P) with the direct sum's pair body. */
/* the near field's pair body sums gradients and dipoles where the plan
 * has them (the host builds per plan) */
#ifndef HFMM_GRADIENT
#define HFMM_GRADIENT 1
#endif
#ifndef HFMM_DIPOLES
#define HFMM_DIPOLES 1
#endif
#define GRADIENT HFMM_GRADIENT
#define DIPOLES HFMM_DIPOLES
#include "kernels/helmholtz3d.h"

/* PMAX sizes the arrays (the host builds with the plan's order, so that
 * private and local arrays are no larger than the order needs); the order
 * p <= PMAX also comes at run time */
#ifndef PMAX
#define PMAX 8
#endif
#ifndef WGS
#define WGS 64
#endif

#ifdef FMMCL_DOUBLE
typedef double2 REAL2;
typedef double3 REAL3;
#define HFMM_BIG 1e150
#else
typedef float2 REAL2;
typedef float3 REAL3;
#define HFMM_BIG 1e15f
#endif

#define NCMAX ((PMAX + 1) * (PMAX + 1)) /* coefficients of an expansion */
#define NR (PMAX + 2)                     /* radial values: one degree more for gradients */
#define NL ((PMAX + 2) * (PMAX + 3) / 2)  /* Legendre values up to degree PMAX + 1 */
#define OWN ((NCMAX + WGS - 1) / WGS)     /* coefficients per work-item */
#define LIDX(n, m) ((n) * ((n) + 1) / 2 + (m))
#define IDX(n, m) ((n) * (n) + (n) + (m))
#define DOFS(n) ((n) * (4 * (n) * (n)-1) / 3)
/* the coaxial operator of order m at COFS(p, m), CSIZE(p) in all (hfmm_cofs) */
#define SQSUM(n) ((n) * ((n) + 1) * (2 * (n) + 1) / 6)
#define COFS(p, m) (SQSUM((p) + 1) - SQSUM((p) + 1 - (m)))
#define CSIZE(p) SQSUM((p) + 1)

static inline REAL2 cmul(REAL2 a, REAL2 b) { return (REAL2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
static inline REAL2 cdiv(REAL2 a, REAL2 b) {
  const REAL d = b.x * b.x + b.y * b.y;
  return (REAL2)((a.x * b.x + a.y * b.y) / d, (a.y * b.x - a.x * b.y) / d);
}
static inline REAL2 cconj(REAL2 a) { return (REAL2)(a.x, -a.y); }
static inline REAL cabs2(REAL2 a) { return a.x * a.x + a.y * a.y; }
static inline REAL2 csin2(REAL2 z) { return (REAL2)(sin(z.x) * cosh(z.y), cos(z.x) * sinh(z.y)); }
static inline REAL2 ccos2(REAL2 z) { return (REAL2)(cos(z.x) * cosh(z.y), -sin(z.x) * sinh(z.y)); }

/* The series of j_n(z) (2n+1)!! / z^n in h = -z^2 / 2, to 20 terms (|z| < 1). */
static REAL2 series_j(REAL2 h, int n) {
  REAL2 t = (REAL2)(1, 0), sum = (REAL2)(1, 0);
  for (int j = 1; j < 20; j++) {
    t = cmul(t, h) / (REAL)(j * (2 * n + 2 * j + 1));
    sum += t;
  }
  return sum;
}

/* j_n(z) / s^n for one n, |z| < 1, as radial_j computes it. */
static REAL2 radial_j_one(REAL2 z, REAL s, int n) {
  REAL2 c = (REAL2)(1, 0);
  const REAL2 zs = z / s;
  for (int i = 1; i <= n; i++) c = cmul(c, zs) / (REAL)(2 * i + 1);
  return cmul(c, series_j(-cmul(z, z) / 2, n));
}

/* j_n(z) / s^n, n = 0..nmax (< NR): series below |z| = 1, Miller above,
 * rescaled as it grows and normalised by the larger of j_0, j_1 */
static void radial_j(REAL2 z, REAL s, int nmax, REAL2 *out) {
  const REAL az = sqrt(cabs2(z));
  for (int n = 0; n <= nmax; n++) out[n] = (REAL2)(0, 0);
  if (az == 0) {
    out[0] = (REAL2)(1, 0);
    return;
  }
  if (az < 1) {
    REAL2 c = (REAL2)(1, 0);
    const REAL2 zs = z / s, h = -cmul(z, z) / 2;
    for (int n = 0; n <= nmax; n++) {
      if (n > 0) c = cmul(c, zs) / (REAL)(2 * n + 1);
      out[n] = cmul(c, series_j(h, n));
    }
    return;
  }
  const int top = nmax + 20 + (int)(2 * az);
  const REAL2 sz = cdiv((REAL2)(s, 0), z);
  const REAL s2 = s * s;
  REAL2 f1 = (REAL2)(0, 0), f0 = (REAL2)(1e-30f, 0);
  for (int n = top; n > 0; n--) {
    const REAL2 fm = (REAL)(2 * n + 1) * cmul(sz, f0) - s2 * f1;
    f1 = f0;
    f0 = fm;
    if (n - 1 <= nmax) out[n - 1] = f0;
    if (n <= nmax) out[n] = f1;
    if (cabs2(f0) > HFMM_BIG * HFMM_BIG) {
      f0 /= HFMM_BIG, f1 /= HFMM_BIG;
      for (int j = n - 1; j <= nmax; j++)
        if (j >= 0) out[j] /= HFMM_BIG;
    }
  }
  const REAL2 sn = csin2(z), j0 = cdiv(sn, z), j1 = cdiv(cdiv(sn, z) - ccos2(z), z);
  const REAL2 c = cabs2(j0) >= cabs2(j1) ? cdiv(j0, out[0]) : cdiv(j1 / s, out[1]);
  for (int n = 0; n <= nmax; n++) out[n] = cmul(out[n], c);
}

/* h_n(z) s^(n+1), n = 0..nmax, upward from h_0, h_1 (z != 0) */
static void radial_h(REAL2 z, REAL s, int nmax, REAL2 *out) {
  const REAL decay = exp(-z.y);
  const REAL2 e = (REAL2)(decay * cos(z.x), decay * sin(z.x));
  const REAL2 sz = cdiv((REAL2)(s, 0), z);
  const REAL2 es = cmul(e, sz);
  out[0] = (REAL2)(es.y, -es.x); /* -i e s / z */
  if (nmax >= 1) out[1] = -cmul(cmul(es, z + (REAL2)(0, 1)), sz);
  for (int n = 1; n < nmax; n++) out[n + 1] = (REAL)(2 * n + 1) * cmul(sz, out[n]) - s * s * out[n - 1];
}

/* The orthonormal Legendre recurrence's factors up to degree nmax, filled
 * by a work-group once (sqrt and division are dear in double): at
 * LIDX(m, m) the diagonal's factor -sqrt((2m+1)/(2m)), at LIDX(m+1, m)
 * sqrt(2m+3), above (a, b) of the three-term recurrence. */
static void legendre_factors(__local REAL2 *f, int nmax, int lid, int wgs) {
  for (int i = lid; i < (nmax + 1) * (nmax + 2) / 2; i += wgs) {
    int n = (int)sqrt((float)(2 * i));
    while (n * (n + 1) / 2 > i) n--;
    while ((n + 1) * (n + 2) / 2 <= i) n++;
    const int m = i - n * (n + 1) / 2;
    REAL2 v;
    if (n == m) v = (REAL2)(m > 0 ? -sqrt((REAL)(2 * m + 1) / (REAL)(2 * m)) : 0, 0);
    else if (n == m + 1) v = (REAL2)(sqrt((REAL)(2 * m + 3)), 0);
    else
      v = (REAL2)(sqrt((REAL)(4 * n * n - 1) / (REAL)(n * n - m * m)),
                  sqrt((REAL)((n - 1) * (n - 1) - m * m) / (REAL)(4 * (n - 1) * (n - 1) - 1)));
    f[i] = v;
  }
}

/* Column m (n = m..nmax) of the orthonormal Legendre values at cos theta
 * = x, sin theta = st, from legendre_factors' table f. */
#define HFMM_LEGENDRE_COLUMN(x, st, m, nmax, f, leg)                               \
  do {                                                                           \
    REAL pmm_ = (REAL)0.28209479177387814; /* 1 / sqrt(4 pi) */                  \
    for (int j_ = 1; j_ <= (m); j_++) pmm_ *= f[LIDX(j_, j_)].x * (st);          \
    leg[LIDX(m, m)] = pmm_;                                                      \
    if ((m) + 1 <= (nmax)) leg[LIDX((m) + 1, m)] = f[LIDX((m) + 1, m)].x * (x) * pmm_; \
    for (int n_ = (m) + 2; n_ <= (nmax); n_++) {                                 \
      const REAL2 ab_ = f[LIDX(n_, m)];                                          \
      leg[LIDX(n_, m)] = ab_.x * ((x)*leg[LIDX(n_ - 1, m)] - ab_.y * leg[LIDX(n_ - 2, m)]); \
    }                                                                            \
  } while (0)

/* The scaled basis at r: radial (regular or outgoing), orthonormal
 * Legendre values (from the factor table f) and e^(i m phi), up to degree
 * nmax */
static void basis_at(REAL3 r, REAL2 k, REAL s, int outgoing, int nmax, __local const REAL2 *f, REAL2 *rad,
                     REAL *leg, REAL2 *eim) {
  const REAL rr = sqrt(r.x * r.x + r.y * r.y + r.z * r.z), rho = sqrt(r.x * r.x + r.y * r.y);
  const REAL x = rr > 0 ? r.z / rr : 1, st = rr > 0 ? rho / rr : 0;
  const REAL2 e1 = rho > 0 ? (REAL2)(r.x / rho, r.y / rho) : (REAL2)(1, 0);
  if (outgoing)
    radial_h(k * rr, s, nmax, rad);
  else
    radial_j(k * rr, s, nmax, rad);
  eim[0] = (REAL2)(1, 0);
  for (int m = 1; m <= nmax; m++) eim[m] = cmul(eim[m - 1], e1);
  for (int m = 0; m <= nmax; m++) HFMM_LEGENDRE_COLUMN(x, st, m, nmax, f, leg);
}

/* B_n^m = rad[n] Y_n^m from the arrays basis_at fills (in any address
 * space); 0 outside |m| <= n, 0 <= n. */
#define HFMM_B(rad, leg, eim, n, m)                                                                     \
  (((n) < 0 || abs(m) > (n))                                                                            \
       ? (REAL2)(0, 0)                                                                                  \
       : ((m) >= 0 ? cmul(rad[n], leg[LIDX(n, m)] * eim[m])                                             \
                   : cmul(rad[n], (((-(m)) & 1) ? -leg[LIDX(n, -(m))] : leg[LIDX(n, -(m))]) *          \
                                      cconj(eim[-(m)]))))

/* The ladder relations' six factors for B_n^m (a1, a0, al, be, alm, bem
 * below), 0 where the degree below does not exist. */
static void ladder_factors(int n, int m, REAL *f) {
  const REAL lo = (REAL)((2 * n - 1) * (2 * n + 1)), hi = (REAL)((2 * n + 1) * (2 * n + 3));
  f[0] = n - abs(m) < 1 ? 0 : sqrt((REAL)(n + m) * (REAL)(n - m) / lo);
  f[1] = sqrt((REAL)(n + 1 + m) * (REAL)(n + 1 - m) / hi);
  f[2] = n - m - 1 < 0 ? 0 : sqrt((REAL)(n - m - 1) * (REAL)(n - m) / lo);
  f[3] = sqrt((REAL)(n + m + 1) * (REAL)(n + m + 2) / hi);
  f[4] = n + m - 1 < 0 ? 0 : sqrt((REAL)(n + m - 1) * (REAL)(n + m) / lo);
  f[5] = sqrt((REAL)(n - m + 1) * (REAL)(n - m + 2) / hi);
}

/* d/dz, d/dx + i d/dy, d/dx - i d/dy of B_n^m by the ladder relations
 * with factors f (ladder_factors; any address space): the degree below
 * has factor sd, above su (regular 1/s, s; outgoing s, 1/s) */
#define HFMM_GRAD_F(rad, leg, eim, n, m, k, sd, su, f, gz, gp, gm)                                       \
  do {                                                                                                  \
    gz = cmul(k, (f[0] * (sd)) * HFMM_B(rad, leg, eim, (n)-1, m) - (f[1] * (su)) * HFMM_B(rad, leg, eim, (n) + 1, m)); \
    gp = cmul(k, (f[2] * (sd)) * HFMM_B(rad, leg, eim, (n)-1, (m) + 1) +                                \
                     (f[3] * (su)) * HFMM_B(rad, leg, eim, (n) + 1, (m) + 1));                          \
    gm = -cmul(k, (f[4] * (sd)) * HFMM_B(rad, leg, eim, (n)-1, (m)-1) +                                 \
                      (f[5] * (su)) * HFMM_B(rad, leg, eim, (n) + 1, (m)-1));                           \
  } while (0)
#define HFMM_GRAD(rad, leg, eim, n, m, k, sd, su, gz, gp, gm)                                           \
  do {                                                                                                  \
    REAL f_[6];                                                                                         \
    ladder_factors(n, m, f_);                                                                           \
    HFMM_GRAD_F(rad, leg, eim, n, m, k, sd, su, f_, gz, gp, gm);                                        \
  } while (0)

/* (n, m) of coefficient idx */
static inline int2 nm_of(int idx) {
  int n = (int)sqrt((float)idx);
  while (n * n > idx) n--;
  while ((n + 1) * (n + 1) <= idx) n++;
  return (int2)(n, idx - n * n - n);
}

/* Coordinates are in units of the root cube's half-side, relative to the
 * root's centre for cell centres (exact dyadic numbers in float too) and
 * to their leaf's centre for points; kr, ki are the wavenumber in those
 * units. */

/* Sources to expansions: group g adds, for every source of the cells
 * entries[begin[g] .. begin[g+1]), its regular (multipole, P2M) or outgoing
 * (local, P2L) coefficients about the centre of cell rows[g] to
 * E[rows[g]]. Records as kernels/helmholtz3d.h. The sources go P2E_CHUNK
 * at a time: their bases are made in parallel (a work-item's radial
 * functions and e^(i m phi) per source, Legendre columns spread over the
 * group) into local memory, then each work-item sums its coefficients over
 * the chunk. */
#ifdef FMMCL_DOUBLE
#define HFMM_REAL_BYTES 8
#else
#define HFMM_REAL_BYTES 4
#endif
#define P2E_PER_SOURCE ((4 * NR + NL + 8) * HFMM_REAL_BYTES)
#ifndef P2E_BUDGET
#define P2E_BUDGET 32768 /* bytes of local memory for a chunk's bases */
#endif
#define P2E_CHUNK (P2E_BUDGET / P2E_PER_SOURCE < WGS ? P2E_BUDGET / P2E_PER_SOURCE : WGS)
#define P2E_OWN ((NCMAX + WGS - 1) / WGS)

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void hfmm_p2e(__global const int *rows, __global const int *begin, __global const int *entries,
              __global const int2 *cell_src, __global const REAL4 *centre, __global const REAL *scale,
              __global const REAL *src, __global REAL2 *E, REAL kr, REAL ki, int outgoing, int p, int dipoles) {
  __local REAL2 lrad[P2E_CHUNK * NR], leim[P2E_CHUNK * NR], lf[NL];
  __local REAL lleg[P2E_CHUNK * NL];
  __local REAL lq[P2E_CHUNK * 8];
  const int g = get_group_id(0), lid = get_local_id(0), row = rows[g], nc = (p + 1) * (p + 1);
  const int nmax = dipoles ? p + 1 : p;
  const REAL4 c = centre[row];
  const REAL s = scale[row];
  const REAL2 k = (REAL2)(kr, ki);
  /* 4 pi i k / s */
  const REAL2 pref = (REAL)12.566370614359172 / s * (REAL2)(-ki, kr);
  const REAL sd = outgoing ? s : 1 / s, su = outgoing ? 1 / s : s;
  legendre_factors(lf, nmax, lid, WGS);
  REAL2 acc[P2E_OWN];
#pragma unroll
  for (int o = 0; o < P2E_OWN; o++) acc[o] = (REAL2)(0, 0);
  for (int e = begin[g]; e < begin[g + 1]; e++) {
    const int2 range = cell_src[entries[e]];
    const REAL4 dc = centre[entries[e]] - c; /* exact: dyadic centres */
    for (int base = range.x; base < range.y; base += P2E_CHUNK) {
      const int nj = min(P2E_CHUNK, range.y - base);
      barrier(CLK_LOCAL_MEM_FENCE); /* (and, on the first pass, the factor table's) */
      if (lid < nj) {
        __global const REAL *sj = src + (size_t)(base + lid) * HELMHOLTZ3D_RECORD;
        const REAL3 r = (REAL3)(sj[0] + dc.x, sj[1] + dc.y, sj[2] + dc.z);
        const REAL rho = sqrt(r.x * r.x + r.y * r.y);
        const REAL2 e1 = rho > 0 ? (REAL2)(r.x / rho, r.y / rho) : (REAL2)(1, 0);
        REAL2 em = (REAL2)(1, 0);
        for (int i = 0; i <= nmax; i++) {
          leim[lid * NR + i] = em;
          em = cmul(em, e1);
        }
        for (int i = 0; i < 8; i++) lq[lid * 8 + i] = sj[3 + i];
      }
      /* per (source, degree): the regular radial function below |z| = 1 by
       * its series; above it, and the outgoing ones (one upward
       * recurrence), all of a source's on its degree 0; and the Legendre
       * column of that order */
      for (int it = lid; it < nj * (nmax + 1); it += WGS) {
        const int j = it / (nmax + 1), m = it - j * (nmax + 1);
        __global const REAL *sj = src + (size_t)(base + j) * HELMHOLTZ3D_RECORD;
        const REAL3 r = (REAL3)(sj[0] + dc.x, sj[1] + dc.y, sj[2] + dc.z);
        const REAL rr = sqrt(r.x * r.x + r.y * r.y + r.z * r.z), rho = sqrt(r.x * r.x + r.y * r.y);
        const REAL2 z = k * rr;
        if (!outgoing && rr > 0 && cabs2(z) < 1) {
          lrad[j * NR + m] = radial_j_one(z, s, m);
        } else if (m == 0) {
          REAL2 rad[NR];
          if (outgoing)
            radial_h(z, s, nmax, rad);
          else
            radial_j(z, s, nmax, rad);
          for (int i = 0; i <= nmax; i++) lrad[j * NR + i] = rad[i];
        }
        const REAL x = rr > 0 ? r.z / rr : 1, st = rr > 0 ? rho / rr : 0;
        __local REAL *leg = lleg + j * NL;
        HFMM_LEGENDRE_COLUMN(x, st, m, nmax, lf, leg);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
      for (int o = 0; o < P2E_OWN; o++) {
        const int idx = lid + o * WGS;
        if (idx < nc) {
          const int2 nm = nm_of(idx);
          const int n = nm.x, m = nm.y;
          REAL2 sum = (REAL2)(0, 0);
          for (int j = 0; j < nj; j++) {
            __local const REAL2 *rad = lrad + j * NR, *eim = leim + j * NR;
            __local const REAL *leg = lleg + j * NL, *q = lq + j * 8;
            /* conj(Y_n^m) = (-1)^m Y_n^-m, the sign applied once below */
            REAL2 v = cmul((REAL2)(q[0], q[1]), HFMM_B(rad, leg, eim, n, -m));
            if (dipoles) {
              /* d . grad = (dx - i dy)/2 d+ + (dx + i dy)/2 d- + dz d/dz */
              const REAL2 dx = (REAL2)(q[2], q[3]), dy = (REAL2)(q[4], q[5]), dz = (REAL2)(q[6], q[7]);
              const REAL2 cp = (dx - (REAL2)(-dy.y, dy.x)) / 2, cmn = (dx + (REAL2)(-dy.y, dy.x)) / 2;
              REAL2 gz, gp, gm;
              HFMM_GRAD(rad, leg, eim, n, -m, k, sd, su, gz, gp, gm);
              v += cmul(cp, gp) + cmul(cmn, gm) + cmul(dz, gz);
            }
            sum += v;
          }
          acc[o] += (m & 1) ? -sum : sum;
        }
      }
    }
  }
#pragma unroll
  for (int o = 0; o < P2E_OWN; o++) {
    const int idx = lid + o * WGS;
    if (idx < nc) E[(size_t)row * nc + idx] += cmul(pref, acc[o]);
  }
}

/* The ladder factors' table where it and the Legendre factors fit in 32
 * KiB of local memory (the highest double orders compute them in place) */
#define E2P_LADDER_TABLE ((6 * NCMAX + 2 * NL) * HFMM_REAL_BYTES <= 32768)

/* Expansions to targets: group g evaluates, at every target of leaf
 * rows[g], the expansions E of the cells entries[begin[g] .. begin[g+1])
 * (regular: local, L2P; outgoing: multipole, M2P) and adds potential and
 * gradient to out (HELMHOLTZ3D_OUT REALs per sorted target). */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void hfmm_e2p(__global const int *rows, __global const int *begin, __global const int *entries,
              __global const int2 *cell_tgt, __global const REAL4 *centre, __global const REAL *scale,
              __global const REAL4 *tgt, __global const REAL2 *E, __global REAL *out, REAL kr, REAL ki,
              int outgoing, int p, int gradient) {
  __local REAL2 lf[NL];
#if E2P_LADDER_TABLE
  __local REAL lg[6 * NCMAX]; /* the ladder factors of every (n, m) */
#endif
  const int g = get_group_id(0), lid = get_local_id(0), row = rows[g];
  const int2 range = cell_tgt[row];
  const REAL2 k = (REAL2)(kr, ki);
  legendre_factors(lf, gradient ? p + 1 : p, lid, WGS);
#if E2P_LADDER_TABLE
  if (gradient)
    for (int idx = lid; idx < (p + 1) * (p + 1); idx += WGS) {
      const int2 nm = nm_of(idx);
      REAL f[6];
      ladder_factors(nm.x, nm.y, f);
      for (int i = 0; i < 6; i++) lg[6 * idx + i] = f[i];
    }
#endif
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int t = range.x + lid; t < range.y; t += WGS) {
    const REAL4 x = tgt[t];
    REAL2 pot = (REAL2)(0, 0), gx = (REAL2)(0, 0), gy = (REAL2)(0, 0), gzz = (REAL2)(0, 0);
    for (int e = begin[g]; e < begin[g + 1]; e++) {
      const int a = entries[e];
      const REAL4 dc = centre[row] - centre[a]; /* exact: dyadic centres */
      const REAL s = scale[a];
      const REAL sd = outgoing ? s : 1 / s, su = outgoing ? 1 / s : s;
      REAL2 rad[NR], eim[NR];
      REAL leg[NL];
      basis_at((REAL3)(x.x + dc.x, x.y + dc.y, x.z + dc.z), k, s, outgoing, gradient ? p + 1 : p, lf, rad,
               leg, eim);
      __global const REAL2 *ea = E + (size_t)a * (p + 1) * (p + 1);
      for (int n = 0; n <= p; n++)
        for (int m = -n; m <= n; m++) {
          const REAL2 cf = ea[IDX(n, m)];
          pot += cmul(cf, HFMM_B(rad, leg, eim, n, m));
          if (!gradient) continue;
          REAL2 dz, dp, dm;
#if E2P_LADDER_TABLE
          __local const REAL *f = lg + 6 * IDX(n, m);
          HFMM_GRAD_F(rad, leg, eim, n, m, k, sd, su, f, dz, dp, dm);
#else
          HFMM_GRAD(rad, leg, eim, n, m, k, sd, su, dz, dp, dm);
#endif
          gx += cmul(cf, (dp + dm) / 2);
          const REAL2 dy = (dp - dm) / 2; /* i d/dy */
          gy += cmul(cf, (REAL2)(dy.y, -dy.x));
          gzz += cmul(cf, dz);
        }
    }
    __global REAL *o = out + (size_t)t * HELMHOLTZ3D_OUT;
    o[0] += pot.x, o[1] += pot.y;
    if (gradient) o[2] += gx.x, o[3] += gx.y, o[4] += gy.x, o[5] += gy.y, o[6] += gzz.x, o[7] += gzz.y;
  }
}

/* Translations: group g adds to Eout[rows[g]] every Ein[entries[e]] moved
 * by rotating the shift onto z (rotation matrices dmat, the shift's polar
 * angle geo[e].x, azimuth phi[e]), the coaxial operator coax[geo[e].y]
 * (hfmm_coaxial's layout) and the rotation back. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void hfmm_translate(__global const int *rows, __global const int *begin, __global const int *entries,
                    __global const int2 *geo, __global const REAL *phi, __global const REAL *dmat,
                    __global const REAL2 *coax, __global const REAL2 *Ein, __global REAL2 *Eout, int p) {
  __local REAL2 A[NCMAX], B[NCMAX];
  const int g = get_group_id(0), lid = get_local_id(0), row = rows[g], nc = (p + 1) * (p + 1);
  REAL2 acc[OWN];
  for (int o = 0; o < OWN; o++) acc[o] = (REAL2)(0, 0);
  for (int e = begin[g]; e < begin[g + 1]; e++) {
    __global const REAL2 *in = Ein + (size_t)entries[e] * nc;
    /* geo.x < 0: the rotation by pi - theta of rotation -geo.x - 1, by
     * d_{m m'}(pi - theta) = (-1)^(n+m) d_{m,-m'}(theta) */
    const int mirror = geo[e].x < 0;
    __global const REAL *d = dmat + (size_t)(mirror ? -geo[e].x - 1 : geo[e].x) * DOFS(p + 1);
    __global const REAL2 *C = coax + (size_t)geo[e].y * CSIZE(p);
    const REAL ph = phi[e];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int idx = lid; idx < nc; idx += WGS) {
      const int m = nm_of(idx).y;
      REAL cs, sn = sincos(m * ph, &cs);
      B[idx] = cmul(in[idx], (REAL2)(cs, sn));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int idx = lid; idx < nc; idx += WGS) {
      const int2 nm = nm_of(idx);
      const int n = nm.x, mp = nm.y, w = 2 * n + 1;
      __global const REAL *dn = d + DOFS(n) + (mirror ? -mp : mp) + n;
      REAL2 sum = (REAL2)(0, 0);
      for (int m = -n; m <= n; m++) {
        const REAL2 v = B[IDX(n, m)] * dn[(m + n) * w];
        sum += mirror && ((n + m) & 1) ? -v : v;
      }
      A[idx] = sum;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int idx = lid; idx < nc; idx += WGS) {
      const int2 nm = nm_of(idx);
      const int n = nm.x, m = nm.y, am = abs(m);
      __global const REAL2 *cr = C + COFS(p, am) + (n - am) * (p + 1 - am);
      REAL2 sum = (REAL2)(0, 0);
      for (int n2 = am; n2 <= p; n2++) sum += cmul(cr[n2 - am], A[IDX(n2, m)]);
      B[idx] = sum;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = 0; o < OWN; o++) {
      const int idx = lid + o * WGS;
      if (idx >= nc) break;
      const int2 nm = nm_of(idx);
      const int n = nm.x, mp = nm.y, w = 2 * n + 1;
      __global const REAL *dn = d + DOFS(n) + (mp + n) * w + n;
      REAL2 sum = (REAL2)(0, 0);
      if (mirror) {
        for (int m = -n; m <= n; m++) sum += B[IDX(n, m)] * dn[-m];
        if ((n + mp) & 1) sum = -sum;
      } else {
        for (int m = -n; m <= n; m++) sum += B[IDX(n, m)] * dn[m];
      }
      REAL cs, sn = sincos(mp * ph, &cs);
      acc[o] += cmul(sum, (REAL2)(cs, -sn));
    }
  }
  for (int o = 0; o < OWN; o++) {
    const int idx = lid + o * WGS;
    if (idx < nc) Eout[(size_t)row * nc + idx] += acc[o];
  }
}

/* M2L by batches: group g takes the M2L_B cells targets[g * M2L_B + b]
 * (-1: none) of one level and one position in their parents, which share
 * most of their V-list directions; entry e is one direction (rotation
 * geo[e].x as hfmm_translate's, coaxial operator geo[e].y, azimuth table
 * row geo[e].z of eim: e^(i m phi), m = 0..p) with one source cell per
 * target (sources[e * M2L_B + b], -1: none). Each operator entry read
 * serves M2L_B translations, where one pair per group read the operators
 * once per pair. The expansions stage in local memory as S[idx * M2L_B +
 * b]; the forward rotation takes M2L_SPLIT work-items per (m', b), each a
 * share of the degrees, and keeps its results in registers. */
#ifndef M2L_B
#define M2L_B 4
#endif
#ifndef M2L_SPLIT
#define M2L_SPLIT 1
#endif
#ifndef M2L_WGS
#define M2L_WGS 160
#endif
#define M2L_OWN ((M2L_B * NCMAX + M2L_WGS - 1) / M2L_WGS)
#define M2L_NA (PMAX / M2L_SPLIT + 1)

__kernel __attribute__((reqd_work_group_size(M2L_WGS, 1, 1)))
void hfmm_m2l_batched(__global const int *targets, __global const int *begin, __global const int *sources,
                      __global const int4 *geo, __global const REAL2 *eim, __global const REAL *dmat,
                      __global const REAL2 *coax, __global const REAL2 *M, __global REAL2 *L) {
  __local REAL2 S[M2L_B * NCMAX];
  const int g = get_group_id(0), lid = get_local_id(0);
  const int p = PMAX, nc = NCMAX;
  /* this work-item's share of the forward rotation: column m', target b,
   * the degrees n = part (mod M2L_SPLIT) */
  const int b23 = lid % M2L_B, mp23 = (lid / M2L_B) % (2 * PMAX + 1) - PMAX;
  const int part = lid / (M2L_B * (2 * PMAX + 1));
  const int active23 = part < M2L_SPLIT, amp23 = abs(mp23);
  REAL2 acc[M2L_OWN];
#pragma unroll
  for (int o = 0; o < M2L_OWN; o++) acc[o] = (REAL2)(0, 0);
  for (int e = begin[g]; e < begin[g + 1]; e++) {
    const int4 ge = geo[e];
    /* ge.x < 0: the rotation by pi - theta of rotation -ge.x - 1, by
     * d_{m m'}(pi - theta) = (-1)^(n+m) d_{m,-m'}(theta) */
    const int mirror = ge.x < 0;
    __global const REAL *d = dmat + (size_t)(mirror ? -ge.x - 1 : ge.x) * DOFS(PMAX + 1);
    __global const REAL2 *C = coax + (size_t)ge.y * CSIZE(PMAX);
    __global const REAL2 *ph = eim + (size_t)ge.z * (PMAX + 1);
    __global const int *se = sources + (size_t)e * M2L_B;
    barrier(CLK_LOCAL_MEM_FENCE);
    /* the sources' multipoles times e^(i m phi) */
    for (int it = lid; it < M2L_B * NCMAX; it += M2L_WGS) {
      const int idx = it / M2L_B, src = se[it % M2L_B];
      REAL2 v = (REAL2)(0, 0);
      if (src >= 0) {
        const int m = nm_of(idx).y;
        REAL2 w = ph[abs(m)];
        if (m < 0) w.y = -w.y;
        v = cmul(M[(size_t)src * NCMAX + idx], w);
      }
      S[it] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* rotation of the shift onto z: A[n] = sum_m d_n[m][m'] S[n, m] */
    REAL2 A[M2L_NA];
#pragma unroll
    for (int n = 0; n <= PMAX; n++) {
      if (n % M2L_SPLIT != part % M2L_SPLIT) continue;
      A[n / M2L_SPLIT] = (REAL2)(0, 0);
      if (active23 && n >= amp23) {
        const int w = 2 * n + 1;
        __global const REAL *dn = d + DOFS(n) + (mirror ? -mp23 : mp23) + n;
        REAL2 sum = (REAL2)(0, 0);
        for (int m = -n; m <= n; m++) {
          const REAL2 v = S[IDX(n, m) * M2L_B + b23] * dn[(m + n) * w];
          sum += mirror && ((n + m) & 1) ? -v : v;
        }
        A[n / M2L_SPLIT] = sum;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int n = 0; n <= PMAX; n++) {
      if (n % M2L_SPLIT != part % M2L_SPLIT) continue;
      if (active23 && n >= amp23) S[IDX(n, mp23) * M2L_B + b23] = A[n / M2L_SPLIT];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* the coaxial shift: T[n, m] = sum_n2 C_|m|[n][n2] A[n2, m] */
    REAL2 T[M2L_OWN];
#pragma unroll
    for (int o = 0; o < M2L_OWN; o++) {
      const int it = lid + o * M2L_WGS;
      T[o] = (REAL2)(0, 0);
      if (M2L_OWN * M2L_WGS == M2L_B * NCMAX || it < M2L_B * NCMAX) {
        const int idx = it / M2L_B, b = it % M2L_B;
        const int2 nm = nm_of(idx);
        const int n = nm.x, m = nm.y, am = abs(m);
        __global const REAL2 *cr = C + COFS(PMAX, am) + (n - am) * (PMAX + 1 - am) - am;
        REAL2 sum = (REAL2)(0, 0);
        for (int n2 = am; n2 <= PMAX; n2++) sum += cmul(cr[n2], S[IDX(n2, m) * M2L_B + b]);
        T[o] = sum;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int o = 0; o < M2L_OWN; o++) {
      const int it = lid + o * M2L_WGS;
      if (M2L_OWN * M2L_WGS == M2L_B * NCMAX || it < M2L_B * NCMAX) S[it] = T[o];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* the rotation back and e^(-i m' phi) */
#pragma unroll
    for (int o = 0; o < M2L_OWN; o++) {
      const int it = lid + o * M2L_WGS;
      if (M2L_OWN * M2L_WGS == M2L_B * NCMAX || it < M2L_B * NCMAX) {
        const int idx = it / M2L_B, b = it % M2L_B;
        const int2 nm = nm_of(idx);
        const int n = nm.x, mp = nm.y, w = 2 * n + 1;
        __global const REAL *dn = d + DOFS(n) + (mp + n) * w + n;
        __local const REAL2 *Sn = S + IDX(n, 0) * M2L_B + b;
        REAL2 sum = (REAL2)(0, 0);
        if (mirror) {
          for (int m = -n; m <= n; m++) sum += Sn[m * M2L_B] * dn[-m];
          if ((n + mp) & 1) sum = -sum;
        } else {
          for (int m = -n; m <= n; m++) sum += Sn[m * M2L_B] * dn[m];
        }
        REAL2 w2 = ph[abs(mp)];
        if (mp > 0) w2.y = -w2.y;
        acc[o] += cmul(sum, w2);
      }
    }
  }
#pragma unroll
  for (int o = 0; o < M2L_OWN; o++) {
    const int it = lid + o * M2L_WGS;
    if (it < M2L_B * NCMAX) {
      const int t = targets[g * M2L_B + it % M2L_B];
      if (t >= 0) L[(size_t)t * NCMAX + it / M2L_B] += acc[o];
    }
  }
}

#ifndef P2P_WGS
#define P2P_WGS WGS
#endif
/* Near field: group g adds, at every target of leaf rows[g], the sources
 * of the leaves entries[begin[g] .. begin[g+1]) (the U list). Points are
 * relative to their leaf's centre, so a close pair's difference keeps the
 * digits the leaf's scale allows, not the root's. */
__kernel __attribute__((reqd_work_group_size(P2P_WGS, 1, 1)))
void hfmm_p2p(__global const int *rows, __global const int *begin, __global const int *entries,
              __global const int2 *cell_src, __global const int2 *cell_tgt, __global const REAL4 *centre,
              __global const REAL *src, __global const REAL4 *tgt, __global REAL *out, REAL kr, REAL ki) {
  __local REAL tile[P2P_WGS * HELMHOLTZ3D_RECORD];
  const int g = get_group_id(0), lid = get_local_id(0), row = rows[g];
  const int2 trange = cell_tgt[row];
  for (int tb = trange.x; tb < trange.y; tb += P2P_WGS) {
    const int t = tb + lid;
    const int active = t < trange.y;
    const REAL4 x = active ? tgt[t] : (REAL4)(0, 0, 0, 0);
    REAL acc[HELMHOLTZ3D_OUT];
    for (int c = 0; c < HELMHOLTZ3D_OUT; c++) acc[c] = 0;
    for (int e = begin[g]; e < begin[g + 1]; e++) {
      const int2 srange = cell_src[entries[e]];
      const REAL4 dc = centre[row] - centre[entries[e]]; /* exact: dyadic centres */
      for (int base = srange.x; base < srange.y; base += P2P_WGS) {
        const int nj = min(P2P_WGS, srange.y - base);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int c = lid; c < nj * HELMHOLTZ3D_RECORD; c += P2P_WGS)
          tile[c] = src[(size_t)base * HELMHOLTZ3D_RECORD + c];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (active)
          for (int j = 0; j < nj; j++) {
            __local const REAL *s = tile + j * HELMHOLTZ3D_RECORD;
            const REAL rx = (x.x - s[0]) + dc.x, ry = (x.y - s[1]) + dc.y, rz = (x.z - s[2]) + dc.z;
            const REAL r2 = rx * rx + ry * ry + rz * rz;
            if (r2 > 0) helmholtz3d_pair(s, rx, ry, rz, r2, kr, ki, acc);
          }
      }
    }
    if (active)
      for (int c = 0; c < HELMHOLTZ3D_OUT; c++) out[(size_t)t * HELMHOLTZ3D_OUT + c] += acc[c];
  }
}
