/* stokes_p2p.cl — the Stokes FMM's work on the points: the near field,
 * Stokeslets and stresslets summed exactly over the U list of its Laplace
 * FMM plan with the pair body of the direct sum (kernels/stokes3d.h); the
 * four Laplace densities put into that plan's sources; the far fields
 * combined with the near field; the permutations that bring strengths
 * in and results out.
 *
 * Layouts are the Laplace plan's (cl/laplace3d/fmm3d_p2p.cl): sorted
 * sources and targets REAL4 relative to their leaf's centre in units of
 * the root's half-side U, center REAL4 per cell, cell_src and cell_tgt
 * [begin, end) per cell, the U list as rows of target leaves with their
 * source leaves. Strengths beside them: f, s, n REAL4
 * per sorted source (s in units of U, as a dipole). out: REAL4 (u, p) per
 * sorted target in units of 1/U and 1/U^2. Needs fmmcl_common.h
 * prepended. */

#ifndef WGS
#define WGS 128 /* work-group size: targets per pass = sources per tile */
#endif
#ifndef STRESSLETS
#define STRESSLETS 0
#endif
#ifndef PRESSURE
#define PRESSURE 1
#endif
/* 1: sources and targets carry what rounding their offsets lost (the
 * Laplace plan's -DCOMPENSATE, decided from the points' spacing), and
 * every pair's difference adds it */
#ifndef COMPENSATE
#define COMPENSATE 0
#endif

#include "kernels/stokes3d.h"

/* Group g: target leaf rows[g] against the sources of its list's leaves,
 * a tile of WGS in local memory at a time, each moved into the target
 * leaf's frame by the exact difference of the two centres. The pair at r = 0 (a
 * target on a source) is skipped, as the direct sum skips it. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void stokes_p2p(__global const int *restrict rows, __global const int *restrict list_begin,
                __global const int *restrict entries, __global const int2 *restrict cell_tgt,
                __global const REAL4 *restrict center, __global const int2 *restrict cell_src,
                __global const REAL4 *restrict src, __global const REAL4 *restrict tgt,
                __global const REAL4 *restrict src_lo, __global const REAL4 *restrict tgt_lo,
                __global const REAL4 *restrict f, __global const REAL4 *restrict ss,
                __global const REAL4 *restrict sn, __global REAL4 *restrict out)
{
  __local REAL tile[WGS * STOKES3D_RECORD];
#if COMPENSATE
  __local REAL4 tile_lo[WGS];
#endif
  const int g = get_group_id(0), lid = get_local_id(0);
  const int2 tr = cell_tgt[rows[g]];
  const REAL4 ct = (REAL4)(center[rows[g]].xyz, 0);
  const int e0 = list_begin[g], e1 = list_begin[g + 1];
  /* the bounds are the group's: every work-item meets every barrier */
  for (int base = tr.x; base < tr.y; base += WGS) {
    const int i = min(base + lid, tr.y - 1);
    const REAL4 t = tgt[i];
#if COMPENSATE
    const REAL4 tl = tgt_lo[i];
#endif
    REAL acc[STOKES3D_OUT] = {0, 0, 0, 0};
    for (int e = e0; e < e1; e++) {
      const int leaf = entries[e];
      const int2 sr = cell_src[leaf];
      const REAL4 b = (REAL4)(center[leaf].xyz, 0) - ct;
      for (int sb = sr.x; sb < sr.y; sb += WGS) {
        const int js = min(sb + lid, sr.y - 1);
        const REAL4 a = src[js], m = a + b;
        __local REAL *rec = tile + lid * STOKES3D_RECORD;
        const REAL4 fj = f[js];
        rec[0] = m.x, rec[1] = m.y, rec[2] = m.z, rec[3] = fj.x, rec[4] = fj.y, rec[5] = fj.z;
#if STRESSLETS
        const REAL4 sj = ss[js], nj = sn[js];
        rec[6] = sj.x, rec[7] = sj.y, rec[8] = sj.z, rec[9] = nj.x, rec[10] = nj.y, rec[11] = nj.z;
#endif
#if COMPENSATE
        {
          /* the source's low part plus what the move lost (TwoSum) */
          const REAL4 bb = m - a;
          tile_lo[lid] = src_lo[js] + ((a - (m - bb)) + (b - bb));
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        const int jn = min(WGS, sr.y - sb);
        for (int j = 0; j < jn; j++) {
          __local const REAL *s = tile + j * STOKES3D_RECORD;
          REAL rx = t.x - s[0], ry = t.y - s[1], rz = t.z - s[2];
#if COMPENSATE
          const REAL4 sl = tile_lo[j];
          rx += tl.x - sl.x, ry += tl.y - sl.y, rz += tl.z - sl.z;
#endif
          const REAL r2 = fma(rx, rx, fma(ry, ry, rz * rz));
          if (r2 > 0) stokes3d_pair(s, rx, ry, rz, r2, acc);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
      }
    }
    if (base + lid < tr.y) out[base + lid] = (REAL4)(acc[0], acc[1], acc[2], acc[3]);
  }
}

/* Strengths arrive in the caller's order, 3 REALs a source: element i of
 * 3 n goes to component i % 3 of sorted source i / 3's REAL4, times scale
 * (1 for forces and orientations; the frame's 1/unit for strengths s,
 * which stresslets multiply by a length as dipoles do). */
__kernel void stokes_put_vectors(__global const REAL *restrict v, __global const int *restrict perm,
                                 const uint n3, __global REAL *restrict dst, const REAL scale)
{
  const uint i = get_global_id(0);
  if (i < n3) {
    const uint j = i / 3, c = i - 3 * j;
    dst[4 * j + c] = v[3 * perm[j] + c] * scale;
  }
}

/* Component k (0, 1, 2) of v. */
static inline REAL component(REAL4 v, int k) { return k == 0 ? v.x : k == 1 ? v.y : v.z; }

/* Density k of the four Laplace sums (lib/methods/stokes3d/stokes3d_fmm.c
 * says why these): charge f_k (k < 3) or y . f (k = 3) into the w of the
 * Laplace plan's sorted sources (src, read as REALs), and for stresslets
 * the dipole -(wb n + wa s) into dip, with wa = n_k or y . n and wb = s_k
 * or y . s. y: the sources relative to the plan's centre, in world units
 * (s in units of U makes the dipole so too). */
__kernel void stokes_densities(const uint n, const int k, __global const REAL4 *restrict y,
                               __global const REAL4 *restrict f, __global const REAL4 *restrict ss,
                               __global const REAL4 *restrict sn, __global REAL *restrict src,
                               __global REAL4 *restrict dip)
{
  const uint j = get_global_id(0);
  if (j >= n) return;
  const REAL4 yj = (REAL4)(y[j].xyz, 0), fj = f[j];
  src[4 * j + 3] = k < 3 ? component(fj, k) : dot(yj, (REAL4)(fj.xyz, 0));
#if STRESSLETS
  const REAL4 a = (REAL4)(ss[j].xyz, 0), b = (REAL4)(sn[j].xyz, 0);
  const REAL wa = k < 3 ? component(b, k) : dot(yj, b), wb = k < 3 ? component(a, k) : dot(yj, a);
  dip[j] = -(wb * b + wa * a);
#endif
}

/* The far fields of the four densities (o0..o3: REAL4 (gradient,
 * potential) per sorted target, in units of 1/U^2 and 1/U) combined,
 *   u_i = phi_i - x_k d_i phi_k + d_i psi,  p = -2 d_k phi_k,
 * with xs the targets relative to the plan's centre in units of U, and
 * added to the near field in out (units as out's). */
__kernel void stokes_combine(const uint n, __global const REAL4 *restrict xs, __global const REAL4 *restrict o0,
                             __global const REAL4 *restrict o1, __global const REAL4 *restrict o2,
                             __global const REAL4 *restrict o3, const REAL inv_unit,
                             __global REAL4 *restrict out)
{
  const uint i = get_global_id(0);
  if (i >= n) return;
  const REAL4 x = xs[i], a = o0[i], b = o1[i], c = o2[i], d = o3[i];
  const REAL4 g = inv_unit * d - x.x * a - x.y * b - x.z * c;
  out[i] += (REAL4)(a.w + g.x, b.w + g.y, c.w + g.z, -2 * (a.x + b.y + c.z));
}

/* Results into the caller's order, velocity times vel_scale and pressure
 * times p_scale (1/unit and 1/unit^2: a Stokeslet's velocity falls as
 * 1/r, its pressure as 1/r^2). */
__kernel void stokes_unsort(__global const REAL4 *restrict out, __global const int *restrict perm,
                            const uint n, __global REAL4 *restrict dst, const REAL vel_scale,
                            const REAL p_scale)
{
  const uint i = get_global_id(0);
  if (i < n) dst[perm[i]] = out[i] * (REAL4)(vel_scale, vel_scale, vel_scale, p_scale);
}
