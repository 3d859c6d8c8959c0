/* p2p.cl — direct all-pairs sums (P2P): the 3D Laplace and Yukawa potential
 * and gradient, the 2D Laplace, and the Gaussian in DIM dimensions. Sources are staged through
 * local memory a tile at a time (GPU Gems 3 ch. 31; Yokota & Barba listing 2);
 * every work-item keeps TPW targets in registers so each source read from
 * local memory feeds TPW interactions. Inputs are padded to whole tiles with
 * zero charges, so no work-item branches on N. */

/* Tunable parameters (fmmtune searches them; the host passes -D values). */
#ifndef WGS
#define WGS 128      /* work-group size = sources per tile */
#endif
#ifndef TPW
#define TPW 1        /* targets per work-item */
#endif
#ifndef UNROLL
#define UNROLL 4     /* unroll of the loop over a tile's sources */
#endif
#ifndef HAS_SOFTENING
#define HAS_SOFTENING 0  /* 1: eps > 0, no pair is singular, no select needed */
#endif
#ifndef DIM
#define DIM 3        /* Gaussian: coordinates per point */
#endif

#ifndef ALL_SELECT
#define ALL_SELECT 0     /* 1: distinct points may coincide anywhere */
#endif

#include "kernels/laplace3d.h"
#include "kernels/yukawa3d.h"

/* One source against the work-item's TPW targets. SELECT(r2) guards the
 * singular pair: a point never sees itself (nor a point on top of it). */
#define LAPLACE_PAIRS(SELECT)                                              \
  {                                                                        \
    const REAL4 s = tile[j];                                               \
    FMMCL_UNROLL(TPW)                                                      \
    for (int k = 0; k < TPW; k++)                                          \
      LAPLACE3D_PAIR(s, tx[k], ty[k], tz[k], eps2, SELECT, pot[k], gx[k], gy[k], gz[k]) \
  }
#define RSQRT_GUARDED LAPLACE3D_RINV_GUARDED
#define RSQRT_PLAIN LAPLACE3D_RINV_PLAIN

/* Laplace: src[j] = (x, y, z, q), tgt[i] = (x, y, z, -), out[i] = (grad, pot).
 * n_src is a multiple of WGS; tgt and out hold WGS*TPW per work-group.
 * The guard costs two instructions of ~16 per pair, so it runs only where a
 * singular pair can be: with softening nowhere; when the host found no
 * coincident distinct points, only on the tiles that hold the work-group's
 * own points (targets_are_sources: source i is target i); else everywhere. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2p_laplace3d(__global const REAL4 *restrict src, const uint n_src,
                   __global const REAL4 *restrict tgt, __global REAL4 *restrict out,
                   const REAL eps2, const uint targets_are_sources) {
  __local REAL4 tile[WGS];
  const uint lid = get_local_id(0);
  const uint own_lo = get_group_id(0) * (WGS * TPW), own_hi = own_lo + WGS * TPW;
  const uint first = own_lo + lid;
  REAL tx[TPW], ty[TPW], tz[TPW], pot[TPW], gx[TPW], gy[TPW], gz[TPW];
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) {
    REAL4 t = tgt[first + k * WGS];
    tx[k] = t.x; ty[k] = t.y; tz[k] = t.z;
    pot[k] = gx[k] = gy[k] = gz[k] = 0;
  }
  for (uint base = 0; base < n_src; base += WGS) {
    tile[lid] = src[base + lid];
    barrier(CLK_LOCAL_MEM_FENCE);
#if HAS_SOFTENING
    FMMCL_UNROLL(UNROLL)
    for (int j = 0; j < WGS; j++) LAPLACE_PAIRS(RSQRT_PLAIN)
#else
    /* the same for the whole work-group: no divergence */
    const bool guard = ALL_SELECT || (targets_are_sources && base < own_hi && base + WGS > own_lo);
    if (guard) {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) LAPLACE_PAIRS(RSQRT_GUARDED)
    } else {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) LAPLACE_PAIRS(RSQRT_PLAIN)
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) out[first + k * WGS] = (REAL4)(gx[k], gy[k], gz[k], pot[k]);
}

/* Gaussian exp(-r^2 / (2 sigma^2)) in DIM dimensions. Structure of arrays:
 * src[c * n_src + j] is coordinate c of source j (c = DIM: its charge),
 * tgt[c * n_tgt + i], out[0 * n_tgt + i] = potential, out[(1 + c) * n_tgt + i]
 * = gradient component c; so every global access is coalesced. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2p_gaussian(__global const REAL *restrict src, const uint n_src,
                  __global const REAL *restrict tgt, const uint n_tgt,
                  __global REAL *restrict out, const REAL inv_2s2, const REAL inv_s2) {
  __local REAL tile[DIM + 1][WGS];
  const uint lid = get_local_id(0);
  const uint first = get_group_id(0) * (WGS * TPW) + lid;
  REAL t[TPW][DIM], g[TPW][DIM], pot[TPW];
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) {
    pot[k] = 0;
    for (int c = 0; c < DIM; c++) {
      t[k][c] = tgt[c * n_tgt + first + k * WGS];
      g[k][c] = 0;
    }
  }
  for (uint base = 0; base < n_src; base += WGS) {
    for (int c = 0; c <= DIM; c++) tile[c][lid] = src[c * n_src + base + lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    FMMCL_UNROLL(UNROLL)
    for (int j = 0; j < WGS; j++) {
      REAL s[DIM];
      for (int c = 0; c < DIM; c++) s[c] = tile[c][j];
      const REAL q = tile[DIM][j];
      FMMCL_UNROLL(TPW)
      for (int k = 0; k < TPW; k++) {
        REAL d[DIM], r2 = 0;
        for (int c = 0; c < DIM; c++) {
          d[c] = s[c] - t[k][c];
          r2 = fma(d[c], d[c], r2);
        }
        const REAL qe = q * EXP(-r2 * inv_2s2);
        pot[k] += qe;
        for (int c = 0; c < DIM; c++) g[k][c] = fma(qe, d[c], g[k][c]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) {
    const uint i = first + k * WGS;
    out[i] = pot[k];
    for (int c = 0; c < DIM; c++) out[(1 + c) * n_tgt + i] = g[k][c] * inv_s2;
  }
}

/* Laplace in the plane, -log sqrt(r^2 + eps^2): same layout and tiling as
 * p2p_laplace3d with src[j] = (x, y, q, 0), tgt[i] = (x, y, -, -),
 * out[i] = (grad x, grad y, 0, pot). The gradient w.r.t. the target is
 * q (s - t) / r^2. The guard is the 3D kernel's: the log and the division
 * are guarded only on tiles where a singular pair can be. In float the log
 * and the reciprocal go to the special-function units (about 1e-7
 * relative), as RSQRT does for the 3D kernel. */
#ifdef FMMCL_DOUBLE
#define LAPLACE2D_LOG(x) log(x)
#define LAPLACE2D_RECIP(x) ((REAL)1 / (x))
#else
#define LAPLACE2D_LOG(x) native_log(x)
#define LAPLACE2D_RECIP(x) native_recip(x)
#endif
#define LAPLACE2D_PAIRS(GUARDED)                                           \
  {                                                                        \
    const REAL4 s = tile[j];                                               \
    FMMCL_UNROLL(TPW)                                                      \
    for (int k = 0; k < TPW; k++) {                                        \
      const REAL dx = s.x - tx[k], dy = s.y - ty[k];                       \
      const REAL r2 = fma(dx, dx, fma(dy, dy, eps2));                      \
      const bool live = !(GUARDED) || r2 > (REAL)0;                        \
      const REAL rinv2 = live ? LAPLACE2D_RECIP(r2) : (REAL)0;            \
      const REAL lg = live ? LAPLACE2D_LOG(r2) : (REAL)0;                  \
      const REAL qr2 = s.z * rinv2;                                        \
      pot[k] = fma((REAL)-0.5 * s.z, lg, pot[k]);                          \
      gx[k] = fma(qr2, dx, gx[k]);                                         \
      gy[k] = fma(qr2, dy, gy[k]);                                         \
    }                                                                      \
  }

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2p_laplace2d(__global const REAL4 *restrict src, const uint n_src,
                   __global const REAL4 *restrict tgt, __global REAL4 *restrict out,
                   const REAL eps2, const uint targets_are_sources) {
  __local REAL4 tile[WGS];
  const uint lid = get_local_id(0);
  const uint own_lo = get_group_id(0) * (WGS * TPW), own_hi = own_lo + WGS * TPW;
  const uint first = own_lo + lid;
  REAL tx[TPW], ty[TPW], pot[TPW], gx[TPW], gy[TPW];
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) {
    REAL4 t = tgt[first + k * WGS];
    tx[k] = t.x; ty[k] = t.y;
    pot[k] = gx[k] = gy[k] = 0;
  }
  for (uint base = 0; base < n_src; base += WGS) {
    tile[lid] = src[base + lid];
    barrier(CLK_LOCAL_MEM_FENCE);
#if HAS_SOFTENING
    FMMCL_UNROLL(UNROLL)
    for (int j = 0; j < WGS; j++) LAPLACE2D_PAIRS(0)
#else
    const bool guard = ALL_SELECT || (targets_are_sources && base < own_hi && base + WGS > own_lo);
    if (guard) {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) LAPLACE2D_PAIRS(1)
    } else {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) LAPLACE2D_PAIRS(0)
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) out[first + k * WGS] = (REAL4)(gx[k], gy[k], 0, pot[k]);
}

/* Yukawa exp(-kappa rho) / rho, rho = sqrt(r^2 + eps^2): p2p_laplace3d's
 * layout, tiling and guard, with kappa (>= 0) as one more argument so a
 * plan's programs do not depend on it. */
#define YUKAWA_PAIRS(SELECT)                                               \
  {                                                                        \
    const REAL4 s = tile[j];                                               \
    FMMCL_UNROLL(TPW)                                                      \
    for (int k = 0; k < TPW; k++)                                          \
      YUKAWA3D_PAIR(s, tx[k], ty[k], tz[k], eps2, kappa, SELECT, pot[k], gx[k], gy[k], gz[k]) \
  }

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2p_yukawa3d(__global const REAL4 *restrict src, const uint n_src,
                  __global const REAL4 *restrict tgt, __global REAL4 *restrict out,
                  const REAL eps2, const uint targets_are_sources, const REAL kappa) {
  __local REAL4 tile[WGS];
  const uint lid = get_local_id(0);
  const uint own_lo = get_group_id(0) * (WGS * TPW), own_hi = own_lo + WGS * TPW;
  const uint first = own_lo + lid;
  REAL tx[TPW], ty[TPW], tz[TPW], pot[TPW], gx[TPW], gy[TPW], gz[TPW];
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) {
    REAL4 t = tgt[first + k * WGS];
    tx[k] = t.x; ty[k] = t.y; tz[k] = t.z;
    pot[k] = gx[k] = gy[k] = gz[k] = 0;
  }
  for (uint base = 0; base < n_src; base += WGS) {
    tile[lid] = src[base + lid];
    barrier(CLK_LOCAL_MEM_FENCE);
#if HAS_SOFTENING
    FMMCL_UNROLL(UNROLL)
    for (int j = 0; j < WGS; j++) YUKAWA_PAIRS(RSQRT_PLAIN)
#else
    const bool guard = ALL_SELECT || (targets_are_sources && base < own_hi && base + WGS > own_lo);
    if (guard) {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) YUKAWA_PAIRS(RSQRT_GUARDED)
    } else {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) YUKAWA_PAIRS(RSQRT_PLAIN)
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) out[first + k * WGS] = (REAL4)(gx[k], gy[k], gz[k], pot[k]);
}
