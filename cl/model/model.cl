/* model.cl — microbenchmarks of the performance model: the U-list
 * instruction mix at full occupancy, and a streaming copy for bandwidth. */

#include "kernels/laplace3d.h"

#ifndef WGS
#define WGS 128
#endif

/* Every work-item evaluates REPS * WGS Laplace pairs against a tile of
 * sources in local memory: 3 subtractions, 3 FMAs for r^2 + eps, one
 * reciprocal square root, then 4 FMAs into potential and gradient, the mix
 * of the P2P (U list) kernel. The host counts global * WGS * reps pairs and
 * raises reps until a run is long enough to time. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void model_ulist(__global const REAL4 *pts, __global REAL4 *out, const int reps) {
  __local REAL4 tile[WGS];
  const size_t i = get_global_id(0);
  const REAL4 x = pts[i];
  tile[get_local_id(0)] = pts[get_group_id(0) * WGS + (get_local_id(0) * 7) % WGS];
  barrier(CLK_LOCAL_MEM_FENCE);
  REAL4 acc = (REAL4)(0, 0, 0, 0);
  for (int r = 0; r < reps; r++) {
    FMMCL_UNROLL(8)
    for (int j = 0; j < WGS; j++) {
      const REAL4 y = tile[j];
      LAPLACE3D_PAIR(y, x.x, x.y, x.z, (REAL)1e-3, LAPLACE3D_RINV_PLAIN, acc.w, acc.x, acc.y, acc.z)
    }
  }
  out[i] = acc;
}

/* b = s * a over REAL4s: one read and one write per element, coalesced;
 * the host reports 2 * n * sizeof(REAL4) bytes moved and tunes the
 * work-group size at launch. */
__kernel
void model_stream(__global const REAL4 *a, __global REAL4 *b, const REAL s) {
  const size_t i = get_global_id(0);
  b[i] = s * a[i];
}
