/* bbfmm.cl — the black-box Chebyshev FMM's operators on a uniform octree
 * (the M2L kernel matrices, P2M, M2M, L2L, L2P and the P2P with indirection
 * arrays, Haney, Darve et al., ARL-TR-7315) and on the adaptive octree
 * (bbfmm_a_*: per-cell P2M, M2M, L2L, compressed M2L, P2L, M2P, L2P). The M2L itself is batched GEMM
 * through CLBlast on the host side. The host prepends the kernel function
 * bbfmm_kernel(dx, dy, dz) and BBFMM_SKIP_ZERO / BBFMM_USER. */

#ifndef NORD
#define NORD 4          /* Chebyshev nodes per dimension */
#endif
#define N3 (NORD * NORD * NORD)
#ifndef TILE
#define TILE 32         /* points whose weights P2M holds in local memory */
#endif
#ifndef WGS
#define WGS 64          /* P2P work-group size */
#endif

/* The column of a cell of a level in the padded parity layout: the 8 child
 * classes p = (ix&1, iy&1, iz&1) one after the other, each over the parent
 * grid with a ring of empty cells, so that one M2L transfer vector is a
 * constant column shift for every target of a class (see bbfmm_m2l_gemm). */
size_t slot_of(uint ix, uint iy, uint iz, uint g2) {
  size_t gp = g2 + 2;
  uint p = ((ix & 1) << 2) | ((iy & 1) << 1) | (iz & 1);
  return (size_t)p * gp * gp * gp + (((ix >> 1) + 1) * gp + (iy >> 1) + 1) * gp + (iz >> 1) + 1;
}

/* w[m] = S_n(x_m, x) for the n nodes; tk[m * NORD + k] = T_k(x_m). */
void cheb_weights(REAL x, __constant REAL *tk, REAL *w) {
  REAL t[NORD];
  t[0] = 1;
  if (NORD > 1) t[1] = x;
  for (int k = 2; k < NORD; k++) t[k] = 2 * x * t[k - 1] - t[k - 2];
  for (int m = 0; m < NORD; m++) {
    REAL s = (REAL)0.5;
    for (int k = 1; k < NORD; k++) s += tk[m * NORD + k] * t[k];
    w[m] = s * (REAL)(2.0 / NORD);
  }
}

REAL pair_value(REAL dx, REAL dy, REAL dz) {
  REAL r2 = dx * dx + dy * dy + dz * dz;
  REAL k = bbfmm_kernel(dx, dy, dz);
#if BBFMM_SKIP_ZERO
  if (r2 == 0) k = 0;
#elif BBFMM_USER
  if (r2 == 0 && !isfinite(k)) k = 0;
#endif
  return k;
}

/* The 316 transfer vectors' matrices K_t[a][b] = K(h (x_a - x_b) - 2 h t). */
__kernel void bbfmm_m2l_matrix(REAL h, __constant REAL *nodes, __global const int *tv, __global REAL *kt) {
  int b = get_global_id(0), a = get_global_id(1), t = get_global_id(2);
  if (b >= N3 || a >= N3) return;
  REAL d0 = h * (nodes[a / (NORD * NORD)] - nodes[b / (NORD * NORD)] - 2 * tv[3 * t]);
  REAL d1 = h * (nodes[a / NORD % NORD] - nodes[b / NORD % NORD] - 2 * tv[3 * t + 1]);
  REAL d2 = h * (nodes[a % NORD] - nodes[b % NORD] - 2 * tv[3 * t + 2]);
  kt[((size_t)t * N3 + a) * N3 + b] = bbfmm_kernel(d0, d1, d2);
}

/* P2M: one work-group of N3 items per leaf (lexicographic index), item m
 * the node; the points' 1D weights are computed once per tile. */
/* P2M of one box (g: centre, w = half side): the charges of points
 * b .. e through their Chebyshev weights, TILE points staged at a time
 * (each point's three 1D weight rows computed once); returns node m's
 * weight. ws, qs: local memory; every item of the group calls it. */
static REAL p2m_box(__global const REAL4 *src, uint b, uint e, REAL4 g, __constant REAL *tk, __local REAL *ws,
                    __local REAL *qs) {
  uint m = get_local_id(0);
  REAL c[3] = {g.x, g.y, g.z}, h = g.w;
  REAL acc = 0;
  for (uint base = b; base < e; base += TILE) {
    uint cnt = min((uint)TILE, e - base);
    for (uint i = m; i < 3 * cnt; i += get_local_size(0)) {
      uint s = i / 3, d = i % 3;
      REAL4 p = src[base + s];
      REAL x = d == 0 ? p.x : d == 1 ? p.y : p.z;
      REAL wl[NORD];
      cheb_weights((x - c[d]) / h, tk, wl);
      for (int k = 0; k < NORD; k++) ws[(s * 3 + d) * NORD + k] = wl[k];
      if (d == 0) qs[s] = p.w;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = 0; s < cnt; s++)
      acc += qs[s] * ws[(s * 3) * NORD + m / (NORD * NORD)] * ws[(s * 3 + 1) * NORD + m / NORD % NORD] *
             ws[(s * 3 + 2) * NORD + m % NORD];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return acc;
}

/* L2P of one box (g as above) from its local values L (local memory):
 * adds the interpolant at targets b .. e to pot, item m taking every
 * N3-th target. */
static void l2p_box(__global const REAL4 *tgt, uint b, uint e, REAL4 g, __constant REAL *tk, __local const REAL *L,
                    __global REAL *pot) {
  for (uint t = b + get_local_id(0); t < e; t += N3) {
    REAL4 p = tgt[t];
    REAL wx[NORD], wy[NORD], wz[NORD];
    cheb_weights((p.x - g.x) / g.w, tk, wx);
    cheb_weights((p.y - g.y) / g.w, tk, wy);
    cheb_weights((p.z - g.z) / g.w, tk, wz);
    REAL f = 0;
    for (int a = 0; a < NORD; a++)
      for (int bb = 0; bb < NORD; bb++) {
        REAL wab = wx[a] * wy[bb];
        for (int c = 0; c < NORD; c++) f += wab * wz[c] * L[(a * NORD + bb) * NORD + c];
      }
    pot[t] += f;
  }
}

/* The kernels launched with one work-item per Chebyshev node say so
 * (reqd_work_group_size): without it NVIDIA's compiler allows 1024-item
 * groups' worth of registers, and at n = 8 in double (512 items) the
 * launch fails with CL_OUT_OF_RESOURCES. */
/* Points are relative to their leaf's centre, so the box is centred at 0. */
__kernel __attribute__((reqd_work_group_size(N3, 1, 1))) void bbfmm_p2m(__global const REAL4 *src, __global const uint *start, uint g, REAL h,
                        __constant REAL *tk, __global REAL *w) {
  __local REAL ws[TILE * 3 * NORD];
  __local REAL qs[TILE];
  uint leaf = get_group_id(0), m = get_local_id(0);
  uint ix = leaf / (g * g), iy = leaf / g % g, iz = leaf % g;
  REAL4 box = (REAL4)(0, 0, 0, h);
  w[slot_of(ix, iy, iz, g / 2) * N3 + m] = p2m_box(src, start[leaf], start[leaf + 1], box, tk, ws, qs);
}

/* M2M of one child in octant (ax, ay, az): its node values x (this item's
 * node m) through the 1D child-parent tables one dimension at a time
 * (3 n^4 instead of n^6); returns parent node m's share. A and B: N3 REALs
 * of local memory; every item of the group calls it (barriers). */
static REAL m2m_octant(REAL x, uint ax, uint ay, uint az, __constant REAL *s, __local REAL *A, __local REAL *B) {
  uint m = get_local_id(0), m1 = m / (NORD * NORD), m2 = m / NORD % NORD, m3 = m % NORD;
  A[m] = x;
  barrier(CLK_LOCAL_MEM_FENCE);
  REAL v = 0;
  for (int c = 0; c < NORD; c++) v += s[(az * NORD + m3) * NORD + c] * A[(m1 * NORD + m2) * NORD + c];
  B[m] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  v = 0;
  for (int c = 0; c < NORD; c++) v += s[(ay * NORD + m2) * NORD + c] * B[(m1 * NORD + c) * NORD + m3];
  barrier(CLK_LOCAL_MEM_FENCE);
  A[m] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  v = 0;
  for (int c = 0; c < NORD; c++) v += s[(ax * NORD + m1) * NORD + c] * A[(c * NORD + m2) * NORD + m3];
  barrier(CLK_LOCAL_MEM_FENCE);
  return v;
}

/* L2L into the child in octant (ax, ay, az) from the parent's values P
 * (local memory): child[mc] = sum_m S[a][m][mc] parent[m], one dimension at
 * a time; returns child node m's value. A, B: N3 REALs of local memory. */
static REAL l2l_octant(__local const REAL *P, uint ax, uint ay, uint az, __constant REAL *s, __local REAL *A,
                       __local REAL *B) {
  uint m = get_local_id(0), m1 = m / (NORD * NORD), m2 = m / NORD % NORD, m3 = m % NORD;
  REAL v = 0;
  for (int c = 0; c < NORD; c++) v += s[(az * NORD + c) * NORD + m3] * P[(m1 * NORD + m2) * NORD + c];
  B[m] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  v = 0;
  for (int c = 0; c < NORD; c++) v += s[(ay * NORD + c) * NORD + m2] * B[(m1 * NORD + c) * NORD + m3];
  A[m] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  v = 0;
  for (int c = 0; c < NORD; c++) v += s[(ax * NORD + c) * NORD + m1] * A[(c * NORD + m2) * NORD + m3];
  barrier(CLK_LOCAL_MEM_FENCE);
  return v;
}

/* M2M: one work-group of N3 items per parent; each child's values pass
 * through the 1D child-parent tables one dimension at a time (3 n^4 per
 * child instead of n^6). s[(a * NORD + m) * NORD + mc]. */
__kernel __attribute__((reqd_work_group_size(N3, 1, 1))) void bbfmm_m2m(__global const REAL *wc, uint gp_, __constant REAL *s, __global REAL *wp) {
  __local REAL A[N3], B[N3];
  uint pc = get_group_id(0), m = get_local_id(0), g = gp_; /* g: cells per side of the parent level */
  uint px = pc / (g * g), py = pc / g % g, pz = pc % g;
  REAL acc = 0;
  for (int oct = 0; oct < 8; oct++) {
    uint ax = oct >> 2, ay = (oct >> 1) & 1, az = oct & 1;
    acc += m2m_octant(wc[slot_of(2 * px + ax, 2 * py + ay, 2 * pz + az, g) * N3 + m], ax, ay, az, s, A, B);
  }
  wp[slot_of(px, py, pz, g / 2) * N3 + m] = acc;
}

/* L2L: one work-group of N3 items per parent, adding to its 8 children:
 * child[mc] += sum_m S[a][m][mc] parent[m], one dimension at a time. */
__kernel __attribute__((reqd_work_group_size(N3, 1, 1))) void bbfmm_l2l(__global const REAL *lp, uint gp_, __constant REAL *s, __global REAL *lc) {
  __local REAL P[N3], A[N3], B[N3];
  uint pc = get_group_id(0), m = get_local_id(0), g = gp_;
  uint px = pc / (g * g), py = pc / g % g, pz = pc % g;
  P[m] = lp[slot_of(px, py, pz, g / 2) * N3 + m];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int oct = 0; oct < 8; oct++) {
    uint ax = oct >> 2, ay = (oct >> 1) & 1, az = oct & 1;
    lc[slot_of(2 * px + ax, 2 * py + ay, 2 * pz + az, g) * N3 + m] += l2l_octant(P, ax, ay, az, s, A, B);
  }
}

/* L2P: one work-group of N3 items per leaf; the leaf's local values in
 * local memory, each item one target at a time. Adds to pot (P2P ran). */
__kernel __attribute__((reqd_work_group_size(N3, 1, 1))) void bbfmm_l2p(__global const REAL4 *tgt, __global const uint *start, uint g, REAL h,
                        __constant REAL *tk, __global const REAL *l, __global REAL *pot) {
  __local REAL L[N3];
  uint leaf = get_group_id(0), m = get_local_id(0);
  uint ix = leaf / (g * g), iy = leaf / g % g, iz = leaf % g;
  L[m] = l[slot_of(ix, iy, iz, g / 2) * N3 + m];
  barrier(CLK_LOCAL_MEM_FENCE);
  l2p_box(tgt, start[leaf], start[leaf + 1], (REAL4)(0, 0, 0, h), tk, L, pot);
}

/* P2P as in ARL-TR-7315: one work-group per target leaf ("cluster"), its
 * neighbour leaves from a CSR list, particles read in place through the
 * leaves' start offsets, source tiles staged in local memory. Points are
 * relative to their leaf's frame; per neighbour the target moves into the
 * source leaf's frame by the difference of the two frames (exact: both are
 * multiples of a power of two well inside the float's range), so a close
 * pair keeps the digits of its offsets within the leaves. */
__kernel void bbfmm_p2p(__global const REAL4 *src, __global const REAL4 *tgt, __global const uint *cluster,
                        __global const uint *nbr_start, __global const uint *nbr_index,
                        __global const uint *src_start, __global const uint *tgt_start, __global REAL *pot,
                        __global const REAL4 *frame) {
  __local REAL4 tile[WGS];
  uint c = get_group_id(0), lid = get_local_id(0), leaf = cluster[c];
  uint tb = tgt_start[leaf], te = tgt_start[leaf + 1];
  REAL4 own = frame[leaf];
  for (uint tbase = tb; tbase < te; tbase += WGS) {
    uint t = tbase + lid;
    REAL4 xt = t < te ? tgt[t] : (REAL4)(0);
    REAL acc = 0;
    for (uint nb = nbr_start[c]; nb < nbr_start[c + 1]; nb++) {
      uint sl = nbr_index[nb], sb = src_start[sl], se = src_start[sl + 1];
      REAL4 x = xt + (own - frame[sl]);
      for (uint sbase = sb; sbase < se; sbase += WGS) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (sbase + lid < se) tile[lid] = src[sbase + lid];
        barrier(CLK_LOCAL_MEM_FENCE);
        uint cnt = min((uint)WGS, se - sbase);
        for (uint j = 0; j < cnt; j++) {
          REAL4 y = tile[j];
          acc += y.w * pair_value(x.x - y.x, x.y - y.y, x.z - y.z);
        }
      }
    }
    if (t < te) pot[t] = acc;
  }
}

/* ---- the adaptive octree (lib/bbfmm_adaptive.c) --------------------------
 * Cells of lib/tree3d.h, multipoles and locals as N3 x n_cells columns
 * (cell c at [c * N3]); per cell its point ranges (uint2: begin, end of the
 * sorted sources or targets) and geometry (REAL4: centre, half width). One
 * work-group of N3 items per cell unless said otherwise. */

/* The position of Chebyshev node m of a cell. */
REAL4 node_of(REAL4 g, __constant REAL *nodes, uint m) {
  return (REAL4)(g.x + g.w * nodes[m / (NORD * NORD)], g.y + g.w * nodes[m / NORD % NORD],
                 g.z + g.w * nodes[m % NORD], 0);
}

/* P2M at the listed leaves. */
__kernel __attribute__((reqd_work_group_size(N3, 1, 1))) void bbfmm_a_p2m(__global const REAL4 *src, __global const uint *cells, __global const uint2 *range,
                          __global const REAL4 *geo, __constant REAL *tk, __global REAL *w) {
  __local REAL ws[TILE * 3 * NORD];
  __local REAL qs[TILE];
  uint cell = cells[get_group_id(0)];
  w[(size_t)cell * N3 + get_local_id(0)] = p2m_box(src, range[cell].x, range[cell].y, geo[cell], tk, ws, qs);
}

/* M2M at the listed parents (from first on): children child[p].x .. + child[p].y, each in
 * octant oct[c] (bit 2: x upper, 1: y, 0: z). */
__kernel __attribute__((reqd_work_group_size(N3, 1, 1))) void bbfmm_a_m2m(__global REAL *w, __global const uint *cells, uint first, __global const uint2 *child,
                          __global const uchar *oct, __constant REAL *s) {
  __local REAL A[N3], B[N3];
  uint pc = cells[first + get_group_id(0)], m = get_local_id(0);
  REAL acc = 0;
  for (uint c = child[pc].x; c < child[pc].x + child[pc].y; c++) {
    uint o = oct[c];
    acc += m2m_octant(w[(size_t)c * N3 + m], o >> 2, (o >> 1) & 1, o & 1, s, A, B);
  }
  w[(size_t)pc * N3 + m] = acc;
}

/* L2L from the listed parents (from first on) into their children (added). */
__kernel __attribute__((reqd_work_group_size(N3, 1, 1))) void bbfmm_a_l2l(__global REAL *l, __global const uint *cells, uint first, __global const uint2 *child,
                          __global const uchar *oct, __constant REAL *s) {
  __local REAL P[N3], A[N3], B[N3];
  uint pc = cells[first + get_group_id(0)], m = get_local_id(0);
  P[m] = l[(size_t)pc * N3 + m];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint c = child[pc].x; c < child[pc].x + child[pc].y; c++) {
    uint o = oct[c];
    l[(size_t)c * N3 + m] += l2l_octant(P, o >> 2, (o >> 1) & 1, o & 1, s, A, B);
  }
}

/* M2L of one level in the compressed space, one transfer vector t per
 * launch: lc[B] += C_t wc[A] for the pairs (B, A) = (eb[e], ea[e]), e in
 * first .. first + count (C_t rank x rank, column-major; columns of wc and lc
 * at cell * rank). A work-group takes M2L_BATCH pairs, so each C_t entry
 * read from memory feeds M2L_BATCH products; within one t every B appears
 * once, so the adds do not race (launches of one queue run in order). */
#define M2L_BATCH (N3 <= 512 ? 8 : 4)
__kernel __attribute__((reqd_work_group_size(N3, 1, 1))) void bbfmm_a_m2l(__global const REAL *wc, __global REAL *lc, uint rank, __global const REAL *cmat, uint t,
                          __global const uint *eb, __global const uint *ea, uint first, uint count) {
  __local REAL x[M2L_BATCH * N3];
  uint i = get_local_id(0), e0 = first + get_group_id(0) * M2L_BATCH;
  uint ne = min((uint)M2L_BATCH, first + count - e0);
  for (uint k = 0; k < ne; k++)
    for (uint j = i; j < rank; j += get_local_size(0)) x[k * rank + j] = wc[(size_t)ea[e0 + k] * rank + j];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (i >= rank) return;
  REAL acc[M2L_BATCH];
  for (uint k = 0; k < M2L_BATCH; k++) acc[k] = 0;
  __global const REAL *c = cmat + (size_t)t * rank * rank;
  for (uint j = 0; j < rank; j++) {
    REAL cij = c[i + (size_t)j * rank];
    for (uint k = 0; k < M2L_BATCH; k++) acc[k] += cij * x[k * rank + j];
  }
  for (uint k = 0; k < ne; k++) lc[(size_t)eb[e0 + k] * rank + i] += acc[k];
}

/* P2L (X list): the sources of the leaves A in X(B) at B's nodes, added to
 * B's locals; one work-group per cell. geo: each cell's centre in its own
 * frame and half side; cframe: the frames (see bbfmm_p2p). */
__kernel __attribute__((reqd_work_group_size(N3, 1, 1))) void bbfmm_a_p2l(__global const REAL4 *src, __global const uint2 *range, __global const REAL4 *geo,
                          __global const REAL4 *cframe, __constant REAL *nodes, __global const uint *xstart,
                          __global const uint *xsrc, __global REAL *l) {
  uint b = get_group_id(0), m = get_local_id(0);
  if (xstart[b] == xstart[b + 1]) return;
  REAL4 yb = node_of(geo[b], nodes, m), fb = cframe[b];
  REAL acc = 0;
  for (uint e = xstart[b]; e < xstart[b + 1]; e++) {
    uint a = xsrc[e];
    REAL4 y = yb + (fb - cframe[a]); /* B's node in A's frame */
    for (uint j = range[a].x; j < range[a].y; j++) {
      REAL4 p = src[j];
      acc += p.w * pair_value(y.x - p.x, y.y - p.y, y.z - p.z);
    }
  }
  l[(size_t)b * N3 + m] += acc;
}

/* M2P (W list): the multipoles of the cells A in W(B) (weights at A's
 * nodes) at B's targets, added to pot; one work-group of WGS items per
 * cell, targets strided. */
__kernel void bbfmm_a_m2p(__global const REAL4 *tgt, __global const uint2 *range, __global const REAL4 *geo,
                          __global const REAL4 *cframe, __constant REAL *nodes, __global const uint *wstart,
                          __global const uint *wsrc, __global const REAL *w, __global REAL *pot) {
  uint b = get_group_id(0), lid = get_local_id(0);
  if (wstart[b] == wstart[b + 1]) return;
  REAL4 fb = cframe[b];
  for (uint t = range[b].x + lid; t < range[b].y; t += WGS) {
    REAL4 x = tgt[t];
    REAL acc = 0;
    for (uint e = wstart[b]; e < wstart[b + 1]; e++) {
      uint a = wsrc[e];
      REAL4 g = geo[a] + (cframe[a] - fb); /* A's centre in B's frame (w: 0 + h) */
      for (uint m = 0; m < N3; m++) {
        REAL4 y = node_of(g, nodes, m);
        acc += w[(size_t)a * N3 + m] * pair_value(x.x - y.x, x.y - y.y, x.z - y.z);
      }
    }
    pot[t] += acc;
  }
}

/* L2P at the listed leaves (added to pot). */
__kernel __attribute__((reqd_work_group_size(N3, 1, 1))) void bbfmm_a_l2p(__global const REAL4 *tgt, __global const uint *cells, __global const uint2 *range,
                          __global const REAL4 *geo, __constant REAL *tk, __global const REAL *l,
                          __global REAL *pot) {
  __local REAL L[N3];
  uint cell = cells[get_group_id(0)], m = get_local_id(0);
  L[m] = l[(size_t)cell * N3 + m];
  barrier(CLK_LOCAL_MEM_FENCE);
  l2p_box(tgt, range[cell].x, range[cell].y, geo[cell], tk, L, pot);
}
