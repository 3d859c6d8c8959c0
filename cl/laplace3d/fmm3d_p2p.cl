/* fmm3d_p2p.cl — list-driven P2P of the 3D Laplace FMM (U list) and treecode
 * (near list): each work-group takes a chunk of at most WGS * TPW targets
 * of one target leaf, each work-item TPW consecutive ones, and streams the
 * sources of the leaf's list, one source leaf at a time, from global
 * memory (TILE=0) or staged WGS at a time in local memory (TILE=1); the
 * rest of the file: the charge and result permutations the FMM's execute
 * runs.
 *
 * Buffers as in expansions3d.cl: sources REAL4 (x, y, z, q), targets REAL4,
 * each relative to its own leaf's centre (local coordinates), out REAL4
 * (d/dx, d/dy, d/dz, phi), each cell's points contiguous; cell_src int2
 * [begin, end) per cell; center REAL4 (x, y, z, 1/side) per cell. Chunk g
 * is chunks[g] = (list row, first target, end target, 0); the row's leaf is
 * rows[row], its list entries[list_begin[row] .. list_begin[row + 1]) (source
 * leaves). Why this schedule: a chunk is independent of the leaf's size, so
 * every group is full but for one per leaf, and small groups (a warp) keep
 * barriers cheap or (TILE=0) absent; every work-item of a group reads the
 * same source at once, which the cache (or local memory) serves as one
 * broadcast, and TPW targets share each such load. Per list entry the
 * targets are moved into the source leaf's frame by the difference of the
 * two centres, which is exact (dyadic), so a pair's difference rounds only
 * relative to the leaves' size. src_lo and tgt_lo hold what rounding the exact offsets
 * lost, and pairs add them (with the rounding of the move, kept by TwoSum):
 * pairs far closer than their leaf is wide (a surface's points in large
 * leaves, tight groups in a leaf at the depth limit) then keep their
 * digits, the high parts' difference being exact for them (Sterbenz).
 * Double adds them to every pair, float to the close ones (FMM3D_PAIR).
 * Adds to out. Needs fmmcl_common.h prepended. */

#ifndef WGS
#define WGS 64       /* work-group size */
#endif
#ifndef UNROLL
#define UNROLL 4     /* unroll of the loop over a source leaf (TILE: a full tile) */
#endif
#ifndef TPW
#define TPW 1        /* targets per work-item: a chunk holds WGS * TPW targets */
#endif
#ifndef TILE
#define TILE 0       /* 1: the group stages WGS sources at a time in local memory */
#endif

/* Where the pair loop reads source j: the global arrays, or (TILE) the
 * group's tile, j then counting within it. */
#if TILE
#define SRC_LO(j) tile_lo[j]
#define SRC_DIP(j) dtile[j]
#else
#define SRC_LO(j) src_lo[j]
#define SRC_DIP(j) dip[j]
#endif

#include "kernels/laplace3d.h"

/* One source against the work-item's target k, 1/r from RINV:
 * LAPLACE3D_RINV_GUARDED where a pair can meet r = 0 (the target itself,
 * coincident points: it contributes nothing, as in p2p.cl), else plain. */
#ifndef COMPENSATE
#define COMPENSATE 1 /* the host's -DCOMPENSATE (fmm3d_setup.c, needs_low_parts) */
#endif

#if !COMPENSATE
/* No leaf's offsets round enough to matter against its points' distances
 * (the host checked): the plain pair, no low parts read. */
#define FMM3D_PAIR(s, k, RINV)                                                              \
  LAPLACE3D_PAIR(s, t[k].x, t[k].y, t[k].z, (REAL)0, RINV, pot[k], gx[k], gy[k], gz[k])
#define DECLARE_TARGET_LOW
#define TARGET_LOW(k, i)
#define MOVE_TARGET(k) t[k] = t0[k] - shift;
#define MOVE_THRESHOLD(k)
#define SOURCE_LOW
#else
#define DECLARE_TARGET_LOW REAL4 tl0[TPW], tl[TPW];
#define TARGET_LOW(k, i) tl0[k] = tgt_lo[i];
/* the target's low part plus what its move into the source leaf's frame
 * lost (TwoSum of t0 and -shift; no product, so contraction cannot fuse it
 * away): t0 + tl0 - shift = t + tl */
#define MOVE_TARGET(k)                                                                      \
  {                                                                                         \
    t[k] = t0[k] - shift;                                                                   \
    const REAL4 bb_ = t[k] - t0[k];                                                         \
    tl[k] = tl0[k] + ((t0[k] - (t[k] - bb_)) + (-shift - bb_));                             \
  }
#ifdef FMMCL_DOUBLE
#define FMM3D_PAIR(s, k, RINV)                                                              \
  {                                                                                         \
    const REAL4 dd = (REAL4)((s.x - t[k].x) + (sl.x - tl[k].x), (s.y - t[k].y) + (sl.y - tl[k].y), \
                             (s.z - t[k].z) + (sl.z - tl[k].z), s.w);                       \
    LAPLACE3D_PAIR(dd, 0, 0, 0, (REAL)0, RINV, pot[k], gx[k], gy[k], gz[k])                 \
  }
#define MOVE_THRESHOLD(k)
#define SOURCE_LOW const REAL4 sl = SRC_LO(j);
#else
/* Float adds the low parts only where they matter: a pair closer than
 * 2^-5 of the source leaf's half-side plus its moved target's largest
 * coordinate (thr; every source of the leaf lies within the half-side);
 * any other pair's roundings cost it at most about 2^-18 of its terms.
 * Every pair runs plain and keeps its target's largest 1 / r (one max;
 * the guard's 0 leaves a target's pair with itself out); where that
 * passes 1 / sqrt(thr), which a uniform set's closest pairs alone do,
 * the work-item goes over the same sources again (NEAR_FIX) and trades
 * each close pair's plain terms for its compensated ones. Where the guard
 * runs (ALL: the target's own leaf, a leaf it touches) it always does: a
 * pair that rounded to r2 = 0 is a distinct point only the low parts see.
 * A compare and branch in every pair cost the P2P a quarter more on an
 * H100. */
#define FMM3D_PAIR(s, k, RINV)                                                              \
  {                                                                                         \
    const REAL dx = s.x - t[k].x, dy = s.y - t[k].y, dz = s.z - t[k].z;                     \
    const REAL r2 = fma(dx, dx, fma(dy, dy, dz * dz));                                      \
    const REAL rinv = RINV(r2), qr = s.w * rinv, qr3 = qr * rinv * rinv;                    \
    near[k] = fmax(near[k], rinv);                                                          \
    pot[k] += qr;                                                                           \
    gx[k] = fma(qr3, dx, gx[k]), gy[k] = fma(qr3, dy, gy[k]), gz[k] = fma(qr3, dz, gz[k]);  \
  }
/* source s (its index j) against target k: a close pair's plain terms out,
 * its terms with the low parts in */
#define CLOSE_PAIR(s, j, k, RINV)                                                           \
  {                                                                                         \
    const REAL dx = s.x - t[k].x, dy = s.y - t[k].y, dz = s.z - t[k].z;                     \
    const REAL r2 = fma(dx, dx, fma(dy, dy, dz * dz));                                      \
    if (r2 < thr[k]) {                                                                      \
      const REAL4 sl = SRC_LO(j);                                                           \
      const REAL ex = dx + (sl.x - tl[k].x), ey = dy + (sl.y - tl[k].y), ez = dz + (sl.z - tl[k].z); \
      const REAL e2 = fma(ex, ex, fma(ey, ey, ez * ez));                                    \
      const REAL ri = RINV(r2), q0 = s.w * ri, q30 = -q0 * ri * ri;                         \
      const REAL rc = RINV(e2), q1 = s.w * rc, q31 = q1 * rc * rc;                          \
      pot[k] += q1 - q0;                                                                    \
      gx[k] = fma(q31, ex, fma(q30, dx, gx[k]));                                            \
      gy[k] = fma(q31, ey, fma(q30, dy, gy[k]));                                            \
      gz[k] = fma(q31, ez, fma(q30, dz, gz[k]));                                            \
    }                                                                                       \
  }
/* after the sources [j0, j1) of SRC: the close pairs' correction where a
 * target met one (or ALL), and a fresh largest 1 / r */
#define NEAR_FIX(SRC, j0, j1, RINV, ALL)                                                    \
  FMMCL_UNROLL(TPW)                                                                         \
  for (int k = 0; k < TPW; k++) {                                                           \
    if ((ALL) || near[k] > lim[k])                                                          \
      for (int j = j0; j < j1; j++) CLOSE_PAIR(SRC[j], j, k, RINV)                          \
    near[k] = 0;                                                                            \
  }
#define MOVE_THRESHOLD(k)                                                                   \
  {                                                                                         \
    const REAL sc_ = ((REAL)0.5 / cs.w + fmax(fabs(t[k].x), fmax(fabs(t[k].y), fabs(t[k].z)))) \
                     * (REAL)0x1p-5;                                                        \
    thr[k] = sc_ * sc_, lim[k] = (REAL)1 / sc_, near[k] = 0;                                \
  }
#define SOURCE_LOW
#endif
#endif

/* Dipoles and Hessians (-DDIPOLES=1, -DHESSIAN=1, compiled in only when a
 * plan asks): each pair goes through the body of the direct sum
 * (cl/kernels/laplace3d_ext.h) into acc, one target per work-item (TPW 1:
 * ten accumulators a target already fill the registers), dip REAL4 per
 * sorted source beside src, hess REAL[6] per sorted target beside out; the
 * offsets' low parts, where the host asks for them, go into every pair in
 * both precisions. */
#ifndef DIPOLES
#define DIPOLES 0
#endif
#ifndef HESSIAN
#define HESSIAN 0
#endif
#define FMM3D_EXT (DIPOLES || HESSIAN)
#if FMM3D_EXT
#undef TPW
#define TPW 1
#define GRADIENT 1
#include "kernels/laplace3d_ext.h"
#undef FMM3D_PAIR
#undef SOURCE_LOW
#undef MOVE_THRESHOLD
#undef NEAR_FIX
#define MOVE_THRESHOLD(k)
#if COMPENSATE
#define SOURCE_LOW const REAL4 sl = SRC_LO(j);
#define EXT_LOW rx += tl[0].x - sl.x, ry += tl[0].y - sl.y, rz += tl[0].z - sl.z;
#else
#define SOURCE_LOW
#define EXT_LOW
#endif
#if DIPOLES
#define EXT_DIPOLE const REAL4 d = SRC_DIP(j);
#else
#define EXT_DIPOLE const REAL4 d = (REAL4)(0, 0, 0, 0);
#endif
#define FMM3D_PAIR(s, k, RINV)                                                              \
  {                                                                                         \
    REAL rx = t[0].x - s.x, ry = t[0].y - s.y, rz = t[0].z - s.z;                           \
    EXT_LOW                                                                                 \
    EXT_DIPOLE                                                                              \
    const REAL r2 = fma(rx, rx, fma(ry, ry, rz * rz));                                      \
    laplace3d_ext_terms(s.w, d.x, d.y, d.z, rx, ry, rz, RINV(r2), acc);                     \
  }
#define EXT_DECLARE                                                                         \
  REAL acc[LAPLACE3D_EXT_OUT];                                                              \
  for (int c = 0; c < LAPLACE3D_EXT_OUT; c++) acc[c] = 0;
#if HESSIAN
#define EXT_HESSIAN_STORE(i)                                                                \
  for (int c = 0; c < 6; c++) hess[6 * (i) + c] += acc[4 + c];
#else
#define EXT_HESSIAN_STORE(i)
#endif
/* the pair wrote acc, not pot and g */
#define EXT_STORE(i)                                                                        \
  {                                                                                         \
    out[i] += (REAL4)(acc[1], acc[2], acc[3], acc[0]);                                      \
    EXT_HESSIAN_STORE(i)                                                                    \
  }
#else
#define EXT_DECLARE
#define EXT_STORE(i) out[i] += (REAL4)(gx[k], gy[k], gz[k], pot[k]);
#endif

#ifndef NEAR_FIX
#define NEAR_FIX(SRC, j0, j1, RINV, ALL)
#endif

/* TILE: each source staged once per group, with its low part and dipole
 * where the pairs read them; a full tile runs the unrolled loop. */
#if TILE
#if COMPENSATE
#define TILE_LOW_LOAD(js) tile_lo[lid] = src_lo[js];
#else
#define TILE_LOW_LOAD(js)
#endif
#if DIPOLES
#define TILE_DIP_LOAD(js) dtile[lid] = dip[js];
#else
#define TILE_DIP_LOAD(js)
#endif
#define SOURCE_LOOP(sr, RINV, ALL)                                                          \
  for (int sb = sr.x; sb < sr.y; sb += WGS) {                                               \
    const int js = min(sb + lid, sr.y - 1);                                                 \
    tile[lid] = src[js];                                                                    \
    TILE_LOW_LOAD(js)                                                                       \
    TILE_DIP_LOAD(js)                                                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                                           \
    const int jn = min(WGS, sr.y - sb);                                                     \
    if (jn == WGS) {                                                                        \
      FMMCL_UNROLL(UNROLL)                                                                  \
      for (int j = 0; j < WGS; j++) PAIRS(tile[j], j, RINV)                                 \
    } else {                                                                                \
      for (int j = 0; j < jn; j++) PAIRS(tile[j], j, RINV)                                  \
    }                                                                                       \
    NEAR_FIX(tile, 0, jn, RINV, ALL)                                                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                                           \
  }
#else
#define SOURCE_LOOP(sr, RINV, ALL)                                                          \
  FMMCL_UNROLL(UNROLL)                                                                      \
  for (int j = sr.x; j < sr.y; j++) PAIRS(src[j], j, RINV)                                  \
  NEAR_FIX(src, sr.x, sr.y, RINV, ALL)
#endif
/* TILE: the loops hold barriers, so the group decides the guard as one
 * (the first barrier: every work-item has read the last entry's flag) */
#if TILE
#define GROUP_TOUCH                                                                         \
  barrier(CLK_LOCAL_MEM_FENCE);                                                             \
  if (lid == 0) any_touch = 0;                                                              \
  barrier(CLK_LOCAL_MEM_FENCE);                                                             \
  if (touch) any_touch = 1;                                                                 \
  barrier(CLK_LOCAL_MEM_FENCE);                                                             \
  touch = any_touch;
#else
#define GROUP_TOUCH
#endif
/* source s (its index j) against the work-item's TPW targets */
#define PAIRS(src_j, j, RINV)                                                               \
  {                                                                                         \
    const REAL4 s = src_j;                                                                  \
    SOURCE_LOW                                                                              \
    FMMCL_UNROLL(TPW)                                                                       \
    for (int k = 0; k < TPW; k++) FMM3D_PAIR(s, k, RINV)                                    \
  }

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void fmm3d_p2p(__global const int4 *restrict chunks, __global const int *restrict rows,
               __global const int *restrict list_begin, __global const int *restrict entries,
               __global const int2 *restrict cell_src, __global const REAL4 *restrict center,
               __global const REAL4 *restrict src, __global const REAL4 *restrict tgt,
               __global REAL4 *restrict out, __global const REAL4 *restrict src_lo,
               __global const REAL4 *restrict tgt_lo, __global const REAL4 *restrict dip,
               __global REAL *restrict hess)
{
  const int4 ch = chunks[get_group_id(0)];
  const int lid = get_local_id(0), first = ch.y + lid * TPW;
#if TILE
  __local REAL4 tile[WGS];
  __local int any_touch;
#if COMPENSATE
  __local REAL4 tile_lo[WGS];
#endif
#if DIPOLES
  __local REAL4 dtile[WGS];
#endif
  /* every work-item meets every barrier: one past the chunk's end works
   * on its last target and writes nothing */
#else
  /* no barrier below: a work-item past the chunk's end just leaves */
  if (first >= ch.z) return;
#endif
  /* targets past the chunk's end repeat its last one (clamped) and are
   * not written */
  const int kk = min(TPW, ch.z - first);
  const int own = rows[ch.x];
  const REAL4 ct = center[own];
  REAL4 t0[TPW], t[TPW];
  REAL pot[TPW], gx[TPW], gy[TPW], gz[TPW];
#if COMPENSATE && !defined(FMMCL_DOUBLE) && !FMM3D_EXT
  REAL thr[TPW], lim[TPW], near[TPW];
#endif
  DECLARE_TARGET_LOW
  EXT_DECLARE
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++) {
    const int i = min(first + k, ch.z - 1);
    t0[k] = tgt[i];
    TARGET_LOW(k, i)
    pot[k] = gx[k] = gy[k] = gz[k] = 0;
  }
  const int e1 = list_begin[ch.x + 1];
  for (int e = list_begin[ch.x]; e < e1; e++) {
    const int c = entries[e];
    const int2 sr = cell_src[c];
    const REAL4 cs = center[c];
    /* exact: both centres are dyadic with few bits */
    const REAL4 shift = (REAL4)(cs.xyz - ct.xyz, 0);
    FMMCL_UNROLL(TPW)
    for (int k = 0; k < TPW; k++) {
      MOVE_TARGET(k)
      MOVE_THRESHOLD(k)
    }
    /* The guard (two instructions of about seventeen a pair) only where a
     * pair can meet r2 = 0: in the target's own leaf (itself, coincident
     * points: same key, same leaf), and in a source leaf that a moved
     * target touches to within rounding, where distinct points across the
     * face may have rounded to one (without the offsets' low parts); a
     * target elsewhere is farther from every source of the leaf than
     * either rounds. Sources lie within the leaf's half-side 0.5 / cs.w. */
    const REAL reach = (REAL)0.5 / cs.w * ((REAL)1 + (REAL)0x1p-20);
    int touch = 0;
    FMMCL_UNROLL(TPW)
    for (int k = 0; k < TPW; k++)
      touch |= fmax(fabs(t[k].x), fmax(fabs(t[k].y), fabs(t[k].z))) <= reach;
    GROUP_TOUCH
    if (c == own || touch) {
      SOURCE_LOOP(sr, LAPLACE3D_RINV_GUARDED, 1)
    } else {
      SOURCE_LOOP(sr, LAPLACE3D_RINV_PLAIN, 0)
    }
  }
  FMMCL_UNROLL(TPW)
  for (int k = 0; k < TPW; k++)
    if (k < kk) EXT_STORE(first + k)
}

/* Charges arrive in the caller's order: sorted source i takes
 * q[perm[i]] into its w, so execute uploads n REALs, not n REAL4s. */
__kernel void fmm3d_put_charges(__global const REAL *restrict q, __global const int *restrict perm,
                                const uint n, __global REAL4 *restrict src)
{
  const uint i = get_global_id(0);
  if (i < n) src[i].w = q[perm[i]];
}

/* Dipoles likewise, 3 per caller's source, into REAL4 (dx, dy, dz, 0)
 * times scale (the device frame's 1/unit). */
__kernel void fmm3d_put_dipoles(__global const REAL *restrict d, __global const int *restrict perm,
                                const uint n, __global REAL4 *restrict dip, const REAL scale)
{
  const uint i = get_global_id(0);
  if (i < n) {
    const int j = perm[i];
    dip[i] = (REAL4)(d[3 * j], d[3 * j + 1], d[3 * j + 2], 0) * scale;
  }
}

/* The Hessian's six per sorted target into the caller's order, times
 * scale (1/u^3, as fmm3d_unsort's). */
__kernel void fmm3d_unsort_hessian(__global const REAL *restrict h, __global const int *restrict perm,
                                   const uint n, __global REAL *restrict dst, const REAL scale)
{
  const uint i = get_global_id(0);
  if (i < n)
    for (int c = 0; c < 6; c++) dst[6 * perm[i] + c] = h[6 * i + c] * scale;
}

/* Results go back in the caller's order, so the host reads them straight
 * through: random writes are cheap here and slow on the host. The kernels
 * work in units of the root's half-side u (lib/methods/laplace3d/fmm3d.h):
 * the potential comes back times 1/u (pot_scale), the gradient 1/u^2. */
__kernel void fmm3d_unsort(__global const REAL4 *restrict out, __global const int *restrict perm,
                           const uint n, __global REAL4 *restrict dst, const REAL grad_scale,
                           const REAL pot_scale)
{
  const uint i = get_global_id(0);
  if (i < n) dst[perm[i]] = out[i] * (REAL4)(grad_scale, grad_scale, grad_scale, pot_scale);
}

/* The M2L table's shift id of every V-list entry (lib/fmm3d_m2l_table.c),
 * one group per V row: anchor[c] = (x, y, z, level) of cell c. A pair that
 * is not same-level, within 3 cells and non-touching would make the table
 * wrong: it gets id 0 and its index goes to *bad for the host to report. */
__kernel void fmm3d_m2l_shift_ids(__global const int *restrict rows, __global const int *restrict begin,
                                  __global const int *restrict entries, __global const int4 *restrict anchor,
                                  __global int *restrict ids, __global int *restrict bad)
{
  const int g = get_group_id(0);
  const int4 t = anchor[rows[g]];
  for (int e = begin[g] + (int)get_local_id(0); e < begin[g + 1]; e += (int)get_local_size(0)) {
    const int4 c = anchor[entries[e]];
    const int dx = t.x - c.x, dy = t.y - c.y, dz = t.z - c.z;
    const int within = dx >= -3 && dx <= 3 && dy >= -3 && dy <= 3 && dz >= -3 && dz <= 3;
    const int touching = dx >= -1 && dx <= 1 && dy >= -1 && dy <= 1 && dz >= -1 && dz <= 1;
    const int ok = t.w == c.w && within && !touching;
    ids[e] = ok ? ((dx + 3) * 7 + (dy + 3)) * 7 + (dz + 3) : 0;
    if (!ok) *bad = e; /* any offending entry will do */
  }
}
