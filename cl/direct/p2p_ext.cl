/* p2p_ext.cl — all-pairs sums of the richer kernels (Laplace with dipoles
 * and Hessians, Helmholtz, Stokes): one target per work-item, sources
 * staged in local memory a tile of WGS records at a time. */
#include "kernels/laplace3d_ext.h"
#include "kernels/helmholtz3d.h"
#include "kernels/stokes3d.h"

#ifndef WGS
#define WGS 64
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
/* what the plan asks for; each leaves terms out of the pair bodies */
#ifndef GRADIENT
#define GRADIENT 0
#endif
#ifndef HESSIAN
#define HESSIAN 0
#endif
#ifndef DIPOLES
#define DIPOLES 0
#endif
#ifndef STRESSLETS
#define STRESSLETS 0
#endif
#ifndef PRESSURE
#define PRESSURE 0
#endif
/* 1: every source record is followed by its offsets' low parts, and a
 * pair's difference adds theirs (the host's choice, where rounding the
 * offsets once would cost the close pairs digits) */
#ifndef COMPENSATE
#define COMPENSATE 0
#endif
#if COMPENSATE
#define LOW_REALS 4
#define LOW_DIFF(c, i) +(tl.c - s[i])
#else
#define LOW_REALS 0
#define LOW_DIFF(c, i)
#endif

/* Points are relative to the host's centre (in units of a power of two
 * near the set's size), each offset a pair of REALs hi + lo; src holds ns
 * (a multiple of WGS) records of REC REALs (each followed by its low parts
 * x, y, z, 0 with COMPENSATE), tgt nt (a multiple of WGS) pairs of REAL4
 * (hi x, y, z, 0; lo x, y, z, 0), out nt * NOUT REALs. A pair's difference
 * is that of the high parts (exact where the points are close) plus, with
 * COMPENSATE, that of the low parts. A pair at r = 0 (a point and itself, or coincident points) is
 * skipped; padding sources carry no strength and sit outside the box. */
#define P2P_EXT_BODY(REC, NOUT, PAIR)                                           \
  __local REAL tile[WGS * (REC + LOW_REALS)];                                   \
  const uint i = get_global_id(0), lid = get_local_id(0);                       \
  const REAL4 t = tgt[2 * i], tl = tgt[2 * i + 1];                              \
  REAL acc[NOUT];                                                               \
  for (int c = 0; c < NOUT; c++) acc[c] = 0;                                    \
  for (uint base = 0; base < ns; base += WGS) {                                 \
    barrier(CLK_LOCAL_MEM_FENCE);                                               \
    for (uint c = lid; c < WGS * (REC + LOW_REALS); c += WGS)                   \
      tile[c] = src[base * (REC + LOW_REALS) + c];                              \
    barrier(CLK_LOCAL_MEM_FENCE);                                               \
    FMMCL_UNROLL(UNROLL)                                                        \
    for (uint j = 0; j < WGS; j++) {                                            \
      __local const REAL *s = tile + j * (REC + LOW_REALS);                     \
      const REAL rx = (t.x - s[0]) LOW_DIFF(x, REC);                            \
      const REAL ry = (t.y - s[1]) LOW_DIFF(y, REC + 1);                        \
      const REAL rz = (t.z - s[2]) LOW_DIFF(z, REC + 2);                        \
      const REAL r2 = rx * rx + ry * ry + rz * rz;                              \
      if (r2 > 0) PAIR;                                                         \
    }                                                                           \
  }                                                                             \
  for (int c = 0; c < NOUT; c++) out[(size_t)i * NOUT + c] = acc[c];

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2p_laplace3d_ext(__global const REAL *src, uint ns, __global const REAL4 *tgt, __global REAL *out) {
  P2P_EXT_BODY(LAPLACE3D_EXT_RECORD, LAPLACE3D_EXT_OUT, laplace3d_ext_pair(s, rx, ry, rz, r2, acc))
}

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2p_helmholtz3d(__global const REAL *src, uint ns, __global const REAL4 *tgt, __global REAL *out,
                     REAL kr, REAL ki) {
  P2P_EXT_BODY(HELMHOLTZ3D_RECORD, HELMHOLTZ3D_OUT, helmholtz3d_pair(s, rx, ry, rz, r2, kr, ki, acc))
}

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2p_stokes3d(__global const REAL *src, uint ns, __global const REAL4 *tgt, __global REAL *out) {
  P2P_EXT_BODY(STOKES3D_RECORD, STOKES3D_OUT, stokes3d_pair(s, rx, ry, rz, r2, acc))
}
