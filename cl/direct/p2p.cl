/* p2p.cl — direct all-pairs sums (P2P): the 3D Laplace and Yukawa potential
 * and gradient, the 2D Laplace, and the Gaussian in DIM dimensions. Sources are staged through
 * local memory a tile at a time (GPU Gems 3 ch. 31; Yokota & Barba listing 2);
 * every work-item keeps TPW targets in registers so each source read from
 * local memory feeds TPW interactions. Inputs are padded to whole tiles with
 * zero charges, so no work-item branches on N.
 *
 * Local frames: points come in Morton order, a tile's sources relative to
 * the tile's centre and a work-group's targets relative to the block's, both
 * centres on a power-of-two grid (tile_centre, block_centre: x, y, z|0 and the
 * radius). Loading a tile adds (tile centre - block centre), exact in float,
 * so a pair's difference rounds at the scale of the frames, not of the whole
 * set. Where targets are the sources, a tile takes its block's centre, so a
 * point meets itself exactly 0 apart. On near tiles (centres closer than 5/4
 * of the radii's sum: pairs may be much closer than the frames are wide; on
 * the others every pair is at least a quarter of the radii apart, so the
 * roundings of the frames cost it at most ~10 ulps) both precisions add the
 * low parts of both offsets (src_lo, tgt_lo: what rounding the exact
 * offsets to REAL lost; a frame may lie far from a tight group of its
 * points) where the host found the data need them (-DCOMPENSATE), and the
 * singular pair is guarded there: only a near tile can hold a point on a
 * target. */

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

#ifndef COMPENSATE
#define COMPENSATE 1 /* the host's -DCOMPENSATE (direct.c, needs_low_parts) */
#endif

/* Near tiles carry the offsets' low parts only where the host found the
 * data need them (COMPENSATE=1: double, any group whose low parts are not
 * negligible against its points' distances, a frame far wider than its
 * tight groups; float, more than one point in a hundred that close, as on a
 * surface or in tight clusters, or distinct points that coincide);
 * otherwise near tiles are the plain arithmetic, no low-part loads or adds,
 * and the guard that of GUARD_RULE. */
#if !COMPENSATE
#define COMPENSATED 0
#else
#define COMPENSATED 1
#endif

#include "kernels/laplace3d.h"
#include "kernels/yukawa3d.h"

#ifndef ALL_SELECT
#define ALL_SELECT 0     /* double: distinct points coincide (host's hash) */
#endif

/* The guard of the singular pair (none with softening): a pair closer than
 * thr_ contributes nothing. A point as its own target, in the frames both
 * share, is exactly 0 apart; coincident points of different frames differ
 * by the roundings of their offsets, so where they may meet thr_ is that
 * resolution, per pair: the w of the low parts carries each point's share
 * (host's pack_points), 2^-92 of its offset squared in float's compensated
 * offsets, in double 2^-100 of it when the host found distinct coincident
 * points and else 0 (double-double offsets: only a point meeting itself is
 * 0 apart). Per point, not per frame: one far point widens its frame, not
 * the guard of the others. */
#if HAS_SOFTENING
#define NEAR_GUARD 0
#else
#define NEAR_GUARD 1
#endif
#define RSQRT_GUARDED(r2) ((r2) > thr_ ? RSQRT(r2) : (REAL)0)
#define RSQRT_PLAIN LAPLACE3D_RINV_PLAIN
#if NEAR_GUARD
#define RSQRT_NEAR RSQRT_GUARDED
#else
#define RSQRT_NEAR RSQRT_PLAIN
#endif

#if COMPENSATED
/* What rounding a + b to s lost, exactly (Knuth's TwoSum); no product, so
 * -cl-mad-enable cannot fuse it away. */
static inline REAL4 two_sum_error(const REAL4 a, const REAL4 b, const REAL4 s) {
  const REAL4 bb = s - a;
  return (a - (s - bb)) + (b - bb);
}
#endif

/* The REAL4 kernels' common steps. FRAME_TARGETS loads the work-item's TPW
 * targets (and their low parts) and the block's centre; LOAD_TILE stages
 * tile `base` in the block's frame and says whether it is near. */
#if COMPENSATED
#define TARGET_LOW(k, i) { const REAL4 l_ = tgt_lo[i]; tlx[k] = l_.x; tly[k] = l_.y; tlz[k] = l_.z; tlw[k] = l_.w; }
#define TILE_LOW(near, s, d, sd) if (near) tile_lo[lid] = src_lo[base + lid] + two_sum_error(s, d, sd);
#define DECLARE_LOW __local REAL4 tile_lo[WGS]; REAL tlx[TPW], tly[TPW], tlz[TPW], tlw[TPW];
#else
#define TARGET_LOW(k, i)
#define TILE_LOW(near, s, d, sd)
#define DECLARE_LOW
#endif

#define FRAME_TARGETS                                                      \
  __local REAL4 tile[WGS];                                                 \
  DECLARE_LOW                                                              \
  const uint lid = get_local_id(0);                                        \
  const uint own_lo = get_group_id(0) * (WGS * TPW), own_hi = own_lo + WGS * TPW; \
  const uint first = own_lo + lid;                                         \
  const REAL4 bc = block_centre[get_group_id(0)];                          \
  REAL tx[TPW], ty[TPW], tz[TPW], pot[TPW], gx[TPW], gy[TPW], gz[TPW];     \
  FMMCL_UNROLL(TPW)                                                        \
  for (int k = 0; k < TPW; k++) {                                          \
    REAL4 t = tgt[first + k * WGS];                                        \
    tx[k] = t.x; ty[k] = t.y; tz[k] = t.z;                                 \
    TARGET_LOW(k, first + k * WGS)                                         \
    pot[k] = gx[k] = gy[k] = gz[k] = 0;                                    \
  }

/* In 2D the centres' z is 0, so d leaves the charge in s.z alone. near:
 * the tile takes the guarded (and compensated) loop, the same for the whole
 * work-group. Compensated: every near tile, the guard per pair (NEAR_THR).
 * Double uncompensated (its offsets rounded once, as before the low parts):
 * only where a singular pair can be, the work-group's own points
 * (targets_are_sources: sorted source i is target i, in the block's frame)
 * or, when the host found coincident points, every near tile, the guard
 * then 2^-50 of the frames (per tile). Float uncompensated: every near
 * tile, guard 0, since distinct points closer than float resolves there may
 * round onto each other (the host compensates where distinct points
 * coincide exactly, and the rounding estimate covers what is left). */
#if COMPENSATED
#define GUARD_RULE(near_) (near_)
#define TILE_THR(rr)
#elif defined(FMMCL_DOUBLE)
#define GUARD_RULE(near_) (ALL_SELECT ? (near_) : (targets_are_sources && base >= own_lo && base < own_hi))
#define TILE_THR(rr) const REAL thr_ = ALL_SELECT ? (rr) * (rr) * (REAL)0x1p-100 : (REAL)0;
#else
#define GUARD_RULE(near_) (near_)
#define TILE_THR(rr) const REAL thr_ = (REAL)0;
#endif
#define LOAD_TILE(near)                                                    \
  const REAL4 tc_ = tile_centre[base / WGS];                               \
  const REAL4 d_ = (REAL4)(tc_.x - bc.x, tc_.y - bc.y, tc_.z - bc.z, 0);   \
  const REAL rr_ = tc_.w + bc.w;                                           \
  const bool near = GUARD_RULE(dot(d_, d_) <= (REAL)1.5625 * rr_ * rr_);   \
  TILE_THR(rr_)                                                            \
  const REAL4 s_ = src[base + lid], sd_ = s_ + d_;                         \
  tile[lid] = sd_;                                                         \
  TILE_LOW(near, s_, d_, sd_)

/* A near pair's difference: in float the high parts' difference (whose
 * rounding is relative to the pair's distance) plus the low parts'. */
#if COMPENSATED
#define NEAR_DIFF(c, k) ((s.c - t##c[k]) + (sl.c - tl##c[k]))
#define NEAR_THR(k) const REAL thr_ = sl.w + tlw[k];
#define NEAR_SOURCE const REAL4 s = tile[j], sl = tile_lo[j];
#else
#define NEAR_DIFF(c, k) (s.c - t##c[k])
#define NEAR_THR(k)
#define NEAR_SOURCE const REAL4 s = tile[j];
#endif

/* One source against the work-item's TPW targets. SELECT(r2) guards the
 * singular pair: a point never sees itself (nor a point on top of it). */
#define LAPLACE_PAIRS(SELECT)                                              \
  {                                                                        \
    const REAL4 s = tile[j];                                               \
    FMMCL_UNROLL(TPW)                                                      \
    for (int k = 0; k < TPW; k++)                                          \
      LAPLACE3D_PAIR(s, tx[k], ty[k], tz[k], eps2, SELECT, pot[k], gx[k], gy[k], gz[k]) \
  }
/* The same on a near tile: the difference formed first, the pair body
 * then sees it as a source at the origin's target. */
#define LAPLACE_NEAR_PAIRS                                                 \
  {                                                                        \
    NEAR_SOURCE                                                            \
    FMMCL_UNROLL(TPW)                                                      \
    for (int k = 0; k < TPW; k++) {                                        \
      const REAL4 dd = (REAL4)(NEAR_DIFF(x, k), NEAR_DIFF(y, k), NEAR_DIFF(z, k), s.w); \
      NEAR_THR(k)                                                          \
      LAPLACE3D_PAIR(dd, 0, 0, 0, eps2, RSQRT_NEAR, pot[k], gx[k], gy[k], gz[k]) \
    }                                                                      \
  }

/* Laplace: src[j] = (x, y, z, q), tgt[i] = (x, y, z, -), out[i] = (grad, pot).
 * n_src is a multiple of WGS; tgt and out hold WGS*TPW per work-group.
 * The guard costs two instructions of ~16 per pair, so it runs only on the
 * tiles GUARD_RULE names, where a singular pair can be (with softening
 * nowhere). */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2p_laplace3d(__global const REAL4 *restrict src, const uint n_src,
                   __global const REAL4 *restrict tgt, __global REAL4 *restrict out,
                   const REAL eps2, const uint targets_are_sources,
                   __global const REAL4 *restrict tile_centre,
                   __global const REAL4 *restrict block_centre,
                   __global const REAL4 *restrict src_lo, __global const REAL4 *restrict tgt_lo) {
  FRAME_TARGETS
  for (uint base = 0; base < n_src; base += WGS) {
    LOAD_TILE(near)
    barrier(CLK_LOCAL_MEM_FENCE);
    /* the same for the whole work-group: no divergence */
    if (near) {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) LAPLACE_NEAR_PAIRS
    } else {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) LAPLACE_PAIRS(RSQRT_PLAIN)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) out[first + k * WGS] = (REAL4)(gx[k], gy[k], gz[k], pot[k]);
}

/* Gaussian exp(-r^2 / (2 sigma^2)) in DIM dimensions. Structure of arrays:
 * src[c * n_src + j] is coordinate c of source j (c = DIM: its charge),
 * tgt[c * n_tgt + i], out[0 * n_tgt + i] = potential, out[(1 + c) * n_tgt + i]
 * = gradient component c; so every global access is coalesced. Centres:
 * DIM REALs per tile and per block; not singular, so no near tiles. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2p_gaussian(__global const REAL *restrict src, const uint n_src,
                  __global const REAL *restrict tgt, const uint n_tgt,
                  __global REAL *restrict out, const REAL inv_2s2, const REAL inv_s2,
                  __global const REAL *restrict tile_centre,
                  __global const REAL *restrict block_centre) {
  __local REAL tile[DIM + 1][WGS];
  const uint lid = get_local_id(0);
  const uint first = get_group_id(0) * (WGS * TPW) + lid;
  REAL t[TPW][DIM], g[TPW][DIM], pot[TPW], bc[DIM];
  for (int c = 0; c < DIM; c++) bc[c] = block_centre[get_group_id(0) * DIM + c];
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) {
    pot[k] = 0;
    for (int c = 0; c < DIM; c++) {
      t[k][c] = tgt[c * n_tgt + first + k * WGS];
      g[k][c] = 0;
    }
  }
  for (uint base = 0; base < n_src; base += WGS) {
    for (int c = 0; c < DIM; c++)
      tile[c][lid] = src[c * n_src + base + lid] + (tile_centre[(base / WGS) * DIM + c] - bc[c]);
    tile[DIM][lid] = src[DIM * n_src + base + lid];
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

/* Laplace in the plane, -log sqrt(r^2 + eps^2): same layout, tiling and
 * frames as p2p_laplace3d with src[j] = (x, y, q, 0), tgt[i] = (x, y, -, -),
 * out[i] = (grad x, grad y, 0, pot). The gradient w.r.t. the target is
 * q (s - t) / r^2. The log and the division are guarded on near tiles. In
 * float the log and the reciprocal go to the special-function units (about
 * 1e-7 relative), as RSQRT does for the 3D kernel. */
#ifdef FMMCL_DOUBLE
#define LAPLACE2D_LOG(x) log(x)
#define LAPLACE2D_RECIP(x) ((REAL)1 / (x))
#else
#define LAPLACE2D_LOG(x) native_log(x)
#define LAPLACE2D_RECIP(x) native_recip(x)
#endif
#define LAPLACE2D_PAIR(dx, dy, q, GUARDED, k)                              \
  {                                                                        \
    const REAL r2 = fma(dx, dx, fma(dy, dy, eps2));                        \
    const bool live = !(GUARDED) || r2 > thr_;                             \
    const REAL rinv2 = live ? LAPLACE2D_RECIP(r2) : (REAL)0;               \
    const REAL lg = live ? LAPLACE2D_LOG(r2) : (REAL)0;                    \
    const REAL qr2 = (q) * rinv2;                                          \
    pot[k] = fma((REAL)-0.5 * (q), lg, pot[k]);                            \
    gx[k] = fma(qr2, dx, gx[k]);                                           \
    gy[k] = fma(qr2, dy, gy[k]);                                           \
  }
#define LAPLACE2D_PAIRS                                                    \
  {                                                                        \
    const REAL4 s = tile[j];                                               \
    FMMCL_UNROLL(TPW)                                                      \
    for (int k = 0; k < TPW; k++) {                                        \
      const REAL dx = s.x - tx[k], dy = s.y - ty[k], thr_ = 0;             \
      LAPLACE2D_PAIR(dx, dy, s.z, 0, k)                                    \
    }                                                                      \
  }
#define LAPLACE2D_NEAR_PAIRS                                               \
  {                                                                        \
    NEAR_SOURCE                                                            \
    FMMCL_UNROLL(TPW)                                                      \
    for (int k = 0; k < TPW; k++) {                                        \
      const REAL dx = NEAR_DIFF(x, k), dy = NEAR_DIFF(y, k);               \
      NEAR_THR(k)                                                          \
      LAPLACE2D_PAIR(dx, dy, s.z, NEAR_GUARD, k)                           \
    }                                                                      \
  }

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2p_laplace2d(__global const REAL4 *restrict src, const uint n_src,
                   __global const REAL4 *restrict tgt, __global REAL4 *restrict out,
                   const REAL eps2, const uint targets_are_sources,
                   __global const REAL4 *restrict tile_centre,
                   __global const REAL4 *restrict block_centre,
                   __global const REAL4 *restrict src_lo, __global const REAL4 *restrict tgt_lo) {
  FRAME_TARGETS
  for (uint base = 0; base < n_src; base += WGS) {
    LOAD_TILE(near)
    barrier(CLK_LOCAL_MEM_FENCE);
    if (near) {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) LAPLACE2D_NEAR_PAIRS
    } else {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) LAPLACE2D_PAIRS
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) out[first + k * WGS] = (REAL4)(gx[k], gy[k], 0, pot[k]);
}

/* Yukawa exp(-kappa rho) / rho, rho = sqrt(r^2 + eps^2): p2p_laplace3d's
 * layout, tiling, frames and guard, with kappa (>= 0) as one more argument
 * so a plan's programs do not depend on it. */
#define YUKAWA_PAIRS(SELECT)                                               \
  {                                                                        \
    const REAL4 s = tile[j];                                               \
    FMMCL_UNROLL(TPW)                                                      \
    for (int k = 0; k < TPW; k++)                                          \
      YUKAWA3D_PAIR(s, tx[k], ty[k], tz[k], eps2, kappa, SELECT, pot[k], gx[k], gy[k], gz[k]) \
  }
#define YUKAWA_NEAR_PAIRS                                                  \
  {                                                                        \
    NEAR_SOURCE                                                            \
    FMMCL_UNROLL(TPW)                                                      \
    for (int k = 0; k < TPW; k++) {                                        \
      const REAL4 dd = (REAL4)(NEAR_DIFF(x, k), NEAR_DIFF(y, k), NEAR_DIFF(z, k), s.w); \
      NEAR_THR(k)                                                          \
      YUKAWA3D_PAIR(dd, 0, 0, 0, eps2, kappa, RSQRT_NEAR, pot[k], gx[k], gy[k], gz[k]) \
    }                                                                      \
  }

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2p_yukawa3d(__global const REAL4 *restrict src, const uint n_src,
                  __global const REAL4 *restrict tgt, __global REAL4 *restrict out,
                  const REAL eps2, const uint targets_are_sources, const REAL kappa,
                  __global const REAL4 *restrict tile_centre,
                  __global const REAL4 *restrict block_centre,
                  __global const REAL4 *restrict src_lo, __global const REAL4 *restrict tgt_lo) {
  FRAME_TARGETS
  for (uint base = 0; base < n_src; base += WGS) {
    LOAD_TILE(near)
    barrier(CLK_LOCAL_MEM_FENCE);
    if (near) {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) YUKAWA_NEAR_PAIRS
    } else {
      FMMCL_UNROLL(UNROLL)
      for (int j = 0; j < WGS; j++) YUKAWA_PAIRS(RSQRT_PLAIN)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) out[first + k * WGS] = (REAL4)(gx[k], gy[k], gz[k], pot[k]);
}
