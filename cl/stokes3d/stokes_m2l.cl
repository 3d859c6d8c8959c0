/* stokes_m2l.cl — the M2L of the Stokes FMM's four Laplace densities in
 * one pass: expansions3d.cl's translation (its shift table, staging and
 * coefficient layout), each staged harmonic read once from local memory
 * and applied to the four multipoles, whose sums then share its load.
 *
 * Arguments as expansions3d.cl's m2l, with the four densities' M and L
 * buffers in place of one. Built with expansions3d.cl's options (-DP,
 * M2L_SIGNED, M2L_BATCH: entries staged per round, sized by the host for
 * one shift and four multipoles each). Needs fmmcl_common.h prepended. */
#include "laplace3d/expansions3d.cl"

#define DENSITIES 4

/* Adds one entry's contribution to target coefficient (j, k) of each
 * density: Ms holds the entry's DENSITIES multipoles one after another,
 * S its staged harmonics (the sums of m2l_entry, loads shared). */
void m2l_entry4(__local const REAL2 *Ms, __local const REAL2 *S, int j, int k, REAL2 *acc)
{
#ifndef M2L_SIGNED
  const REAL sk = (k & 1) ? -1 : 1;
#endif
#pragma unroll
  for (int n = 0; n <= P; n++) {
    const int row = n * (n + 1) / 2;
#ifdef M2L_SIGNED
    __local const REAL2 *In = S + NSHIFT_ROW(n + j) + k; /* I_{n+j}^k */
    const REAL2 i0 = In[0];
    for (int d = 0; d < DENSITIES; d++) acc[d] += cmulc(Ms[d * NCOEF + row], i0);
#pragma unroll
    for (int m = 1; m <= n; m++) {
      const REAL2 a = In[m], b = ((m & 1) ? -1 : 1) * In[-m];
      const REAL2 sum = a + b, rot = (REAL2)(a.y - b.y, b.x - a.x);
      for (int d = 0; d < DENSITIES; d++) {
        const REAL2 mm = Ms[d * NCOEF + row + m];
        acc[d] += mm.x * sum + mm.y * rot;
      }
    }
#else
    __local const REAL2 *In = S + (n + j) * (n + j + 1) / 2; /* I_{n+j}^0 */
#pragma unroll
    for (int m = 0; m <= n; m++) {
      const REAL2 z = In[m + k];
      for (int d = 0; d < DENSITIES; d++) acc[d] += cmulc(Ms[d * NCOEF + row + m], z);
    }
#pragma unroll
    for (int u = 1; u <= n; u++) {
      const int t = k - u;
      const REAL2 z = In[abs(t)];
      const REAL s = (t < 0) ? sk : ((u & 1) ? -1 : 1);
      const REAL2 w = s * (REAL2)(z.x, (t < 0) ? -z.y : z.y);
      for (int d = 0; d < DENSITIES; d++) acc[d] += cmul(Ms[d * NCOEF + row + u], w);
    }
#endif
  }
}

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
      for (int b = 0; b < count; b++) m2l_entry4(Ms + b * DENSITIES * NCOEF, S + b * NSTAGE, j, k, acc);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid < NCOEF) {
    const int at = cell * NCOEF + lid;
    const REAL sign = (j & 1) ? -1 : 1;
    L0[at] += sign * acc[0], L1[at] += sign * acc[1], L2[at] += sign * acc[2], L3[at] += sign * acc[3];
  }
}
