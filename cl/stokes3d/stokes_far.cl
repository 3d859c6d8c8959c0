/* stokes_far.cl — the Stokes FMM's four Laplace densities through
 * expansions3d.cl's operators together, where they share work: the P2M
 * (the densities made from each source's strengths in the kernel, each
 * source's harmonics computed once for all four) and the M2L (its shift
 * table, staging and coefficient layout; each staged harmonic read once
 * from local memory and applied to the four multipoles).
 *
 * Arguments as expansions3d.cl's p2m and m2l, with the four densities' M
 * and L buffers in place of one. Built with expansions3d.cl's options
 * (-DP, -DDIPOLES for stresslets, M2L_SIGNED, M2L_BATCH: entries staged
 * per round, sized by the host for one shift and four multipoles each).
 * Needs fmmcl_common.h prepended. */
#include "laplace3d/expansions3d.cl"

#define DENSITIES 4

/* Component k (0, 1, 2) of v. */
REAL component(REAL4 v, int k) { return k == 0 ? v.x : k == 1 ? v.y : v.z; }

/* Group g: cell cells[g], sources [src_begin[g], src_begin[g+1]): their
 * positions src (the Laplace plan's, in the leaf's frame), and beside
 * them y (relative to the Stokes plan's centre, world units), f, s (in
 * units of U) and n. Density k's charge is f_k (k < 3) or y . f, its
 * dipole -(wb n + wa s) with wa = n_k or y . n, wb = s_k or y . s
 * (lib/methods/stokes3d/stokes3d_fmm.c, cl/stokes3d/stokes_p2p.cl's
 * stokes_densities). */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void stokes_p2m(__global const REAL4 *restrict src, __global const int *restrict src_begin,
                __global const int *restrict cells, __global const REAL4 *restrict center,
                __global const REAL4 *restrict y, __global const REAL4 *restrict f,
                __global const REAL4 *restrict ss, __global const REAL4 *restrict sn,
                __global REAL2 *restrict M0, __global REAL2 *restrict M1, __global REAL2 *restrict M2,
                __global REAL2 *restrict M3)
{
  __local REAL4 tile[WGS], ytile[WGS], ftile[WGS];
#if DIPOLES
  __local REAL4 stile[WGS], ntile[WGS];
#endif
  __local REAL T[NRECUR];
  const int g = get_group_id(0), lid = get_local_id(0), cell = cells[g];
  const REAL4 c = center[cell];
  const int2 nm = coef_degree_order(min(lid, NCOEF - 1));
  const int n = nm.x, m = nm.y;
  REAL2 acc[4] = {(REAL2)(0, 0), (REAL2)(0, 0), (REAL2)(0, 0), (REAL2)(0, 0)};
  stage_recurrence(T); /* the tile's barrier below publishes it */
  const int end = src_begin[g + 1];
  for (int base = src_begin[g]; base < end; base += WGS) {
    const int js = min(base + lid, end - 1);
    tile[lid] = src[js];
    ytile[lid] = (REAL4)(y[js].xyz, 0);
    ftile[lid] = (REAL4)(f[js].xyz, 0);
#if DIPOLES
    stile[lid] = (REAL4)(ss[js].xyz, 0);
    ntile[lid] = (REAL4)(sn[js].xyz, 0);
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    const int count = min(WGS, end - base);
    for (int j = 0; j < count && lid < NCOEF; j++) {
      const REAL4 p = tile[j] * c.w, yj = ytile[j], fj = ftile[j];
      const REAL2 r = solid_regular(n, m, p.x, p.y, p.z, T);
      acc[0] += fj.x * r, acc[1] += fj.y * r, acc[2] += fj.z * r, acc[3] += dot(yj, fj) * r;
#if DIPOLES
      /* d . grad R_n^m = (dx - i dy)/2 R_{n-1}^{m+1} - (dx + i dy)/2 R_{n-1}^{m-1} + dz R_{n-1}^m */
      const REAL2 rp = regular_any(n - 1, m + 1, p.x, p.y, p.z, T), rm = regular_any(n - 1, m - 1, p.x, p.y, p.z, T),
                  r0 = regular_any(n - 1, m, p.x, p.y, p.z, T);
      const REAL4 a = stile[j], b = ntile[j];
      const REAL ya = dot(yj, a), yb = dot(yj, b);
      for (int k = 0; k < 4; k++) {
        const REAL wa = k < 3 ? component(b, k) : yb, wb = k < 3 ? component(a, k) : ya;
        const REAL4 d = -(wb * b + wa * a) * c.w;
        const REAL2 u = (REAL2)(d.x, -d.y) * (REAL)0.5, v = (REAL2)(d.x, d.y) * (REAL)0.5;
        acc[k] += cmul(u, rp) - cmul(v, rm) + d.z * r0;
      }
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid < NCOEF) {
    const int at = cell * NCOEF + lid;
    M0[at] += acc[0], M1[at] += acc[1], M2[at] += acc[2], M3[at] += acc[3];
  }
}

#if STOKES_M2L /* the host's choice: its local arrays fit the device */
/* Group g: target cell cells[g], its V list list[list_begin[g] ..
 * list_begin[g+1]) of source cells, shift[e] the table row of entry e. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void stokes_m2l(__global const int *restrict cells, __global const int *restrict list_begin,
                __global const int *restrict list, __global const int *restrict shift,
                __global const REAL2 *restrict table, __global const REAL2 *restrict M0,
                __global const REAL2 *restrict M1, __global const REAL2 *restrict M2,
                __global const REAL2 *restrict M3, __global REAL2 *restrict L0, __global REAL2 *restrict L1,
                __global REAL2 *restrict L2, __global REAL2 *restrict L3)
{
  __local REAL2 S[M2L_BATCH * NSTAGE], Ms[M2L_BATCH * DENSITIES * NCOEF];
  const int g = get_group_id(0), lid = get_local_id(0), cell = cells[g];
  const int2 nm = coef_degree_order(min(lid, NCOEF - 1));
  const int j = nm.x, k = nm.y;
  const int e0 = list_begin[g], e1 = list_begin[g + 1];
  REAL2 acc[DENSITIES];
  for (int d = 0; d < DENSITIES; d++) acc[d] = (REAL2)(0, 0);
  for (int e = e0; e < e1; e += M2L_BATCH) {
    const int count = min(M2L_BATCH, e1 - e);
    for (int i = lid; i < count * NSTAGE; i += WGS) {
      const int b = i / NSTAGE;
      S[i] = table[shift[e + b] * NSHIFT + m2l_stage_source(i - b * NSTAGE)];
    }
    for (int i = lid; i < count * NCOEF; i += WGS) {
      const int b = i / NCOEF, c = i - b * NCOEF, at = list[e + b] * NCOEF + c;
      __local REAL2 *to = Ms + b * DENSITIES * NCOEF + c;
      to[0] = M0[at], to[NCOEF] = M1[at], to[2 * NCOEF] = M2[at], to[3 * NCOEF] = M3[at];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < NCOEF)
      for (int b = 0; b < count; b++) m2l_sums(Ms + b * DENSITIES * NCOEF, S + b * NSTAGE, j, k, acc, DENSITIES);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid < NCOEF) {
    const int at = cell * NCOEF + lid;
    const REAL sign = (j & 1) ? -1 : 1;
    L0[at] += sign * acc[0], L1[at] += sign * acc[1], L2[at] += sign * acc[2], L3[at] += sign * acc[3];
  }
}
#endif
