/* fgt.cl — the fast Gauss transform's operators in scaled coordinates (kernel
 * exp(-|y - x|^2)): Hermite moments of source boxes, Hermite evaluation at
 * targets (Cruz, Layton & Barba 2011 sec. 4.2), Taylor coefficients from
 * sources, Hermite-to-Taylor translation, Taylor evaluation, and the direct
 * sum of near box pairs. Points are sorted by box, coordinates are structure
 * of arrays (x[k * n + i]) relative to their box's frame, and box centres
 * are given relative to their box's frame too; where two boxes meet, one
 * side moves into the other's frame by the difference of the two frames
 * (sframe, tframe, hframe: source boxes, target boxes, Hermite slots),
 * exact in float, so offsets within boxes keep their digits wherever the
 * data lies. Multi-indices |alpha| < P in graded
 * lexicographic order, alpha[t * DIM + k]. Every evaluation kernel adds into
 * out[], which the host zeroes first. */

#ifndef DIM
#define DIM 3
#endif
#ifndef P
#define P 8            /* truncation: |alpha| < P */
#endif
#ifndef NTERMS
#define NTERMS 120     /* C(P - 1 + DIM, DIM) */
#endif
#ifndef WGS
#define WGS 64         /* work-group size */
#endif
#ifndef CPL
#define CPL 4          /* source clusters staged per load (Hermite evaluation) */
#endif
#ifndef TPI
#define TPI ((NTERMS + WGS - 1) / WGS) /* terms per work-item (coefficient kernels) */
#endif
#ifndef UNROLL
#define UNROLL 8       /* unroll of the loops over terms */
#endif
#ifndef HORNER
#define HORNER (DIM <= 3) /* 1: nested evaluation unrolled for P (the host turns it off for long expansions) */
#endif

/* 1 / alpha! for term t, from the multi-index: computed on the fly, so that
 * no factorial table is read. */
REAL inv_factorial(__local const uchar *la, int t) {
  REAL f = 1;
  for (int k = 0; k < DIM; k++)
    for (int n = 2; n <= la[t * DIM + k]; n++) f *= (REAL)n;
  return (REAL)1 / f;
}

/* h_n(t) = (-1)^n d^n/dt^n exp(-t^2) for n < P by h_{n+1} = 2t h_n - 2n h_{n-1},
 * into this work-item's column of h (rows of WGS). */
void hermite_column(REAL t, __local REAL *h, uint col) {
  REAL hm = EXP(-t * t), hn = 2 * t * hm;
  h[col] = hm;
#if P > 1
  h[WGS + col] = hn;
#endif
  FMMCL_UNROLL(P)
  for (int n = 1; n + 1 < P; n++) {
    const REAL next = 2 * t * hn - 2 * n * hm;
    hm = hn;
    hn = next;
    h[(n + 1) * WGS + col] = hn;
  }
}

/* Moments M[slot][t] = sum_i q_i (x_i - c)^alpha_t of the source boxes that
 * carry Hermite expansions: one work-item per (box, term). The 1/alpha! is
 * applied where the moments are read. */
__kernel void fgt_hermite_moments(__global const REAL *restrict sx, const uint ns,
                                  __global const REAL *restrict q, __global const uint *restrict sb_start,
                                  __global const uint *restrict hbox, __global const REAL *restrict hcentre,
                                  const uint nh, __global const uchar *restrict alpha,
                                  __global REAL *restrict M) {
  const uint gid = get_global_id(0);
  if (gid >= nh * NTERMS) return;
  const uint slot = gid / NTERMS, t = gid % NTERMS, b = hbox[slot];
  int a[DIM];
  REAL c[DIM];
  for (int k = 0; k < DIM; k++) {
    a[k] = alpha[t * DIM + k];
    c[k] = hcentre[k * nh + slot];
  }
  REAL sum = 0;
  for (uint i = sb_start[b]; i < sb_start[b + 1]; i++) {
    REAL m = q[i];
    for (int k = 0; k < DIM; k++) m *= pown(sx[k * ns + i] - c[k], a[k]);
    sum += m;
  }
  M[gid] = sum;
}

/* Position of alpha in the graded lexicographic order (for DIM <= 3), a
 * compile-time constant once the loops below are unrolled:
 *   d = 2: n(n+1)/2 + a1,   d = 3: n(n+1)(n+2)/6 + m(m+1)/2 + a2
 * with n = |alpha|, m = a1 + a2. */
#define GLEX2(a0, a1) (((a0) + (a1)) * ((a0) + (a1) + 1) / 2 + (a1))
#define GLEX3(a0, a1, a2)                                                              \
  (((a0) + (a1) + (a2)) * ((a0) + (a1) + (a2) + 1) * ((a0) + (a1) + (a2) + 2) / 6 + \
   ((a1) + (a2)) * ((a1) + (a2) + 1) / 2 + (a2))

/* h_n(t), n < P, into a private array (registers once unrolled). */
#define HERMITE_PRIVATE(t, h)                              \
  {                                                        \
    h[0] = EXP(-(t) * (t));                                \
    if (P > 1) h[1 % P] = 2 * (t) * h[0]; /* 1 % P: in bounds at P = 1 */ \
    FMMCL_UNROLL(P)                                        \
    for (int n_ = 1; n_ + 1 < P; n_++)                     \
      h[n_ + 1] = 2 * (t) * h[n_] - 2 * n_ * h[n_ - 1];    \
  }

/* sum_alpha A[alpha] prod_k h_k[alpha_k] for one cluster whose coefficients
 * start at A: for DIM <= 3 nested Horner-style, the product factored axis by
 * axis (sum_a0 h0[a0] (sum_a1 h1[a1] (sum_a2 h2[a2] A[..]))), every loop
 * unrolled for the compile-time P so that indices are constants and the
 * Hermite values stay in registers; otherwise a sum over the staged
 * multi-indices with the Hermite values in local memory. */
#if HORNER
REAL hermite_sum(__local const REAL *A, const REAL *y, __local const REAL *c) {
  REAL h0[P];
  HERMITE_PRIVATE(y[0] - c[0], h0);
#if DIM == 1
  REAL s = 0;
  FMMCL_UNROLL(P)
  for (int a0 = 0; a0 < P; a0++) s = fma(A[a0], h0[a0], s);
  return s;
#elif DIM == 2
  REAL h1[P];
  HERMITE_PRIVATE(y[1] - c[1], h1);
  REAL s = 0;
  FMMCL_UNROLL(P)
  for (int a0 = 0; a0 < P; a0++) {
    REAL in = 0;
    FMMCL_UNROLL(P)
    for (int a1 = 0; a1 < P; a1++)
      if (a0 + a1 < P) in = fma(A[GLEX2(a0, a1)], h1[a1], in);
    s = fma(h0[a0], in, s);
  }
  return s;
#else
  REAL h1[P], h2[P];
  HERMITE_PRIVATE(y[1] - c[1], h1);
  HERMITE_PRIVATE(y[2] - c[2], h2);
  REAL s = 0;
  FMMCL_UNROLL(P)
  for (int a0 = 0; a0 < P; a0++) {
    REAL mid = 0;
    FMMCL_UNROLL(P)
    for (int a1 = 0; a1 < P; a1++) {
      if (a0 + a1 >= P) continue;
      REAL in = 0;
      FMMCL_UNROLL(P)
      for (int a2 = 0; a2 < P; a2++)
        if (a0 + a1 + a2 < P) in = fma(A[GLEX3(a0, a1, a2)], h2[a2], in);
      mid = fma(h1[a1], in, mid);
    }
    s = fma(h0[a0], mid, s);
  }
  return s;
#endif
}
#endif

/* The Hermite evaluation (the paper's kernel): one target per work-item, a
 * work-group per tile (up to WGS targets of one target box). The source
 * clusters of the box's Hermite list are taken CPL at a time: their
 * coefficients (moments scaled by 1/alpha!, the factorial computed on the
 * fly), centres and the multi-indices are staged in local memory with each
 * work-item loading one value at a time; each work-item then builds its
 * Hermite functions h_n(y_k - c_k) by the recurrence and sums the expansion
 * (hermite_sum above when HORNER; the staged multi-indices otherwise). */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void fgt_hermite_eval(__global const REAL *restrict tx, const uint nt,
                      __global const uint *restrict tile_box, __global const uint *restrict tile_first,
                      __global const uint *restrict tile_count, __global const uint *restrict hl_start,
                      __global const uint *restrict hl, __global const REAL *restrict hcentre, const uint nh,
                      __global const REAL *restrict M, __global const uchar *restrict alpha,
                      __global REAL *restrict out, __global const REAL *restrict hframe,
                      __global const REAL *restrict tframe, const uint ntb) {
  __local REAL lA[CPL * NTERMS];
  __local REAL lc[CPL * DIM];
  __local uchar la[NTERMS * DIM];
#if !HORNER
  __local REAL lh[DIM * P * WGS];
#endif
  const uint lid = get_local_id(0), tile = get_group_id(0);
  const uint box = tile_box[tile], i = tile_first[tile] + lid;
  const bool valid = lid < tile_count[tile];
  REAL y[DIM];
  for (int k = 0; k < DIM; k++) y[k] = valid ? tx[k * nt + i] : 0;
  for (uint j = lid; j < NTERMS * DIM; j += WGS) la[j] = alpha[j];
  const uint lo = hl_start[box], hi = hl_start[box + 1];
  REAL acc = 0;
  for (uint base = lo; base < hi; base += CPL) {
    const uint nc = min((uint)CPL, hi - base);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint j = lid; j < nc * NTERMS; j += WGS) {
      const uint c = j / NTERMS, t = j - c * NTERMS;
      lA[j] = M[hl[base + c] * NTERMS + t] * inv_factorial(la, t);
    }
    for (uint j = lid; j < nc * DIM; j += WGS) {
      const uint c = j / DIM, k = j - c * DIM, h = hl[base + c];
      lc[j] = hcentre[k * nh + h] + (hframe[k * nh + h] - tframe[k * ntb + box]); /* in the target's frame */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint c = 0; c < nc; c++) {
#if HORNER
      acc += hermite_sum(lA + c * NTERMS, y, lc + c * DIM);
#else
      FMMCL_UNROLL(DIM)
      for (int k = 0; k < DIM; k++) hermite_column(y[k] - lc[c * DIM + k], lh + k * P * WGS, lid);
      REAL s = 0;
      FMMCL_UNROLL(UNROLL)
      for (int t = 0; t < NTERMS; t++) {
        REAL prod = lA[c * NTERMS + t];
        FMMCL_UNROLL(DIM)
        for (int k = 0; k < DIM; k++) prod *= lh[(k * P + la[t * DIM + k]) * WGS + lid];
        s += prod;
      }
      acc += s;
#endif
    }
  }
  if (valid) out[i] += acc;
}

/* Taylor coefficients from sources: B[slot][beta] = sum over the source
 * boxes of the target box's Taylor list of q h_beta(x - c_T) / beta!. A
 * work-group per target box, TPI terms per work-item; sources are staged
 * WGS at a time, each work-item building one source's Hermite functions. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void fgt_taylor_coefs(__global const REAL *restrict sx, const uint ns, __global const REAL *restrict q,
                      __global const uint *restrict sb_start, __global const uint *restrict tl_start,
                      __global const uint *restrict tl, __global const uint *restrict tbox,
                      __global const REAL *restrict tb_centre, const uint ntb,
                      __global const uchar *restrict alpha, __global REAL *restrict B,
                      __global const REAL *restrict sframe, const uint nsb, __global const REAL *restrict tframe) {
  __local uchar la[NTERMS * DIM];
  __local REAL lh[DIM * P * WGS];
  __local REAL lq[WGS];
  const uint lid = get_local_id(0), slot = get_group_id(0), box = tbox[slot];
  for (uint j = lid; j < NTERMS * DIM; j += WGS) la[j] = alpha[j];
  REAL ct[DIM], acc[TPI];
  for (int k = 0; k < DIM; k++) ct[k] = tb_centre[k * ntb + box];
  for (int r = 0; r < TPI; r++) acc[r] = 0;
  for (uint e = tl_start[box]; e < tl_start[box + 1]; e++) {
    const uint b = tl[e], first = sb_start[b], last = sb_start[b + 1];
    REAL c[DIM]; /* the target box's centre in the source box's frame */
    for (int k = 0; k < DIM; k++) c[k] = ct[k] + (tframe[k * ntb + box] - sframe[k * nsb + b]);
    for (uint base = first; base < last; base += WGS) {
      const uint n = min((uint)WGS, last - base);
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid < n) {
        for (int k = 0; k < DIM; k++) hermite_column(sx[k * ns + base + lid] - c[k], lh + k * P * WGS, lid);
        lq[lid] = q[base + lid];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int r = 0; r < TPI; r++) {
        const int t = lid + r * WGS;
        if (t >= NTERMS) break;
        REAL s = 0;
        for (uint j = 0; j < n; j++) {
          REAL prod = lq[j];
          FMMCL_UNROLL(DIM)
          for (int k = 0; k < DIM; k++) prod *= lh[(k * P + la[t * DIM + k]) * WGS + j];
          s += prod;
        }
        acc[r] += s;
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int r = 0; r < TPI; r++) {
    const int t = lid + r * WGS;
    if (t < NTERMS) B[slot * NTERMS + t] = acc[r] * inv_factorial(la, t);
  }
}

/* Hermite-to-Taylor: B[slot][beta] += (-1)^|beta| / beta! sum_alpha A_alpha
 * h_{alpha+beta}(c_T - c_S) over the source boxes of the target box's H2T
 * list. A work-group per target box; per source box the first DIM
 * work-items build h_n(c_T - c_S), n < 2P - 1, and all stage A. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void fgt_h2t(__global const uint *restrict xl_start, __global const uint *restrict xl,
             __global const REAL *restrict hcentre, const uint nh, __global const REAL *restrict M,
             __global const uint *restrict tbox, __global const REAL *restrict tb_centre, const uint ntb,
             __global const uchar *restrict alpha, __global REAL *restrict B, __global const REAL *restrict hframe,
             __global const REAL *restrict tframe) {
  __local uchar la[NTERMS * DIM];
  __local REAL lA[NTERMS];
  __local REAL lw[DIM * (2 * P - 1)];
  const uint lid = get_local_id(0), slot = get_group_id(0), box = tbox[slot];
  for (uint j = lid; j < NTERMS * DIM; j += WGS) la[j] = alpha[j];
  REAL acc[TPI];
  for (int r = 0; r < TPI; r++) acc[r] = 0;
  for (uint e = xl_start[box]; e < xl_start[box + 1]; e++) {
    const uint h = xl[e];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < DIM) {
      const REAL w = (tb_centre[lid * ntb + box] - hcentre[lid * nh + h]) +
                     (tframe[lid * ntb + box] - hframe[lid * nh + h]);
      REAL hm = EXP(-w * w), hn = 2 * w * hm;
      lw[lid * (2 * P - 1)] = hm;
      if (2 * P - 1 > 1) lw[lid * (2 * P - 1) + 1] = hn;
      for (int n = 1; n + 1 < 2 * P - 1; n++) {
        const REAL next = 2 * w * hn - 2 * n * hm;
        hm = hn;
        hn = next;
        lw[lid * (2 * P - 1) + n + 1] = hn;
      }
    }
    for (uint j = lid; j < NTERMS; j += WGS) lA[j] = M[h * NTERMS + j] * inv_factorial(la, j);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < TPI; r++) {
      const int b = lid + r * WGS;
      if (b >= NTERMS) break;
      REAL s = 0;
      FMMCL_UNROLL(UNROLL)
      for (int a = 0; a < NTERMS; a++) {
        REAL prod = lA[a];
        FMMCL_UNROLL(DIM)
        for (int k = 0; k < DIM; k++) prod *= lw[k * (2 * P - 1) + la[a * DIM + k] + la[b * DIM + k]];
        s += prod;
      }
      acc[r] += s;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int r = 0; r < TPI; r++) {
    const int b = lid + r * WGS;
    if (b >= NTERMS) break;
    int order = 0;
    for (int k = 0; k < DIM; k++) order += la[b * DIM + k];
    const REAL v = acc[r] * inv_factorial(la, b);
    B[slot * NTERMS + b] += (order & 1) ? -v : v;
  }
}

#if HORNER
/* sum_beta B[beta] u^beta by nested Horner, axis by axis, unrolled for P. */
REAL taylor_sum(__local const REAL *B, const REAL *u) {
#if DIM == 1
  REAL s = 0;
  FMMCL_UNROLL(P)
  for (int a0 = P - 1; a0 >= 0; a0--) s = fma(s, u[0], B[a0]);
  return s;
#elif DIM == 2
  REAL s = 0;
  FMMCL_UNROLL(P)
  for (int a0 = P - 1; a0 >= 0; a0--) {
    REAL in = 0;
    FMMCL_UNROLL(P)
    for (int a1 = P - 1; a1 >= 0; a1--)
      if (a0 + a1 < P) in = fma(in, u[1], B[GLEX2(a0, a1)]);
    s = fma(s, u[0], in);
  }
  return s;
#else
  REAL s = 0;
  FMMCL_UNROLL(P)
  for (int a0 = P - 1; a0 >= 0; a0--) {
    REAL mid = 0;
    FMMCL_UNROLL(P)
    for (int a1 = P - 1; a1 >= 0; a1--) {
      if (a0 + a1 >= P) continue;
      REAL in = 0;
      FMMCL_UNROLL(P)
      for (int a2 = P - 1; a2 >= 0; a2--)
        if (a0 + a1 + a2 < P) in = fma(in, u[2], B[GLEX3(a0, a1, a2)]);
      mid = fma(mid, u[1], in);
    }
    s = fma(s, u[0], mid);
  }
  return s;
#endif
}
#endif

/* Taylor evaluation: one target per work-item, a work-group per tile of a
 * target box with a Taylor expansion; the box's coefficients and the
 * multi-indices are staged in local memory; the polynomial is summed by
 * nested Horner (HORNER) or from per-work-item powers in local memory. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void fgt_taylor_eval(__global const REAL *restrict tx, const uint nt,
                     __global const uint *restrict tile_box, __global const uint *restrict tile_first,
                     __global const uint *restrict tile_count, __global const int *restrict tslot,
                     __global const REAL *restrict tb_centre, const uint ntb,
                     __global const REAL *restrict B, __global const uchar *restrict alpha,
                     __global REAL *restrict out) {
  __local REAL lB[NTERMS];
  const uint lid = get_local_id(0), tile = get_group_id(0);
  const uint box = tile_box[tile], i = tile_first[tile] + lid;
  const bool valid = lid < tile_count[tile];
  const uint slot = (uint)tslot[box];
  for (uint j = lid; j < NTERMS; j += WGS) lB[j] = B[slot * NTERMS + j];
  REAL u[DIM];
  for (int k = 0; k < DIM; k++) u[k] = valid ? tx[k * nt + i] - tb_centre[k * ntb + box] : 0;
#if HORNER
  barrier(CLK_LOCAL_MEM_FENCE);
  const REAL s = taylor_sum(lB, u);
#else
  __local uchar la[NTERMS * DIM];
  __local REAL lp[DIM * P * WGS];
  for (uint j = lid; j < NTERMS * DIM; j += WGS) la[j] = alpha[j];
  for (int k = 0; k < DIM; k++) {
    REAL pw = 1;
    FMMCL_UNROLL(P)
    for (int n = 0; n < P; n++) {
      lp[(k * P + n) * WGS + lid] = pw;
      pw *= u[k];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  REAL s = 0;
  FMMCL_UNROLL(UNROLL)
  for (int t = 0; t < NTERMS; t++) {
    REAL prod = lB[t];
    FMMCL_UNROLL(DIM)
    for (int k = 0; k < DIM; k++) prod *= lp[(k * P + la[t * DIM + k]) * WGS + lid];
    s += prod;
  }
#endif
  if (valid) out[i] += s;
}

/* Direct sum over the source boxes of the target box's direct list: a
 * work-group per tile, sources staged WGS at a time in local memory. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void fgt_direct(__global const REAL *restrict sx, const uint ns, __global const REAL *restrict q,
                __global const uint *restrict sb_start, __global const uint *restrict dl_start,
                __global const uint *restrict dl, __global const REAL *restrict tx, const uint nt,
                __global const uint *restrict tile_box, __global const uint *restrict tile_first,
                __global const uint *restrict tile_count, __global REAL *restrict out,
                __global const REAL *restrict sframe, const uint nsb, __global const REAL *restrict tframe,
                const uint ntb) {
  __local REAL ls[(DIM + 1) * WGS];
  const uint lid = get_local_id(0), tile = get_group_id(0);
  const uint box = tile_box[tile], i = tile_first[tile] + lid;
  const bool valid = lid < tile_count[tile];
  REAL yt[DIM];
  for (int k = 0; k < DIM; k++) yt[k] = valid ? tx[k * nt + i] : 0;
  REAL acc = 0;
  for (uint e = dl_start[box]; e < dl_start[box + 1]; e++) {
    const uint b = dl[e], first = sb_start[b], last = sb_start[b + 1];
    REAL y[DIM]; /* the target in the source box's frame */
    for (int k = 0; k < DIM; k++) y[k] = yt[k] + (tframe[k * ntb + box] - sframe[k * nsb + b]);
    for (uint base = first; base < last; base += WGS) {
      const uint n = min((uint)WGS, last - base);
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid < n) {
        for (int k = 0; k < DIM; k++) ls[k * WGS + lid] = sx[k * ns + base + lid];
        ls[DIM * WGS + lid] = q[base + lid];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (uint j = 0; j < n; j++) {
        REAL r2 = 0;
        for (int k = 0; k < DIM; k++) {
          const REAL d = ls[k * WGS + j] - y[k];
          r2 = fma(d, d, r2);
        }
        acc += ls[DIM * WGS + j] * EXP(-r2);
      }
    }
  }
  if (valid) out[i] += acc;
}

/* The same sum with one target per work-item and no staging, for boxes that
 * hold few targets (a tile of WGS would leave most work-items idle):
 * neighbouring work-items share boxes, so their source reads hit the cache. */
__kernel void fgt_direct_points(__global const REAL *restrict sx, const uint ns, __global const REAL *restrict q,
                                __global const uint *restrict sb_start, __global const uint *restrict dl_start,
                                __global const uint *restrict dl, __global const REAL *restrict tx, const uint nt,
                                __global const uint *restrict tgt_box, __global REAL *restrict out,
                                __global const REAL *restrict sframe, const uint nsb,
                                __global const REAL *restrict tframe, const uint ntb) {
  const uint i = get_global_id(0);
  if (i >= nt) return;
  const uint box = tgt_box[i];
  REAL yt[DIM];
  for (int k = 0; k < DIM; k++) yt[k] = tx[k * nt + i];
  REAL acc = 0;
  for (uint e = dl_start[box]; e < dl_start[box + 1]; e++) {
    const uint b = dl[e];
    REAL y[DIM];
    for (int k = 0; k < DIM; k++) y[k] = yt[k] + (tframe[k * ntb + box] - sframe[k * nsb + b]);
    for (uint j = sb_start[b]; j < sb_start[b + 1]; j++) {
      REAL r2 = 0;
      for (int k = 0; k < DIM; k++) {
        const REAL d = sx[k * ns + j] - y[k];
        r2 = fma(d, d, r2);
      }
      acc += q[j] * EXP(-r2);
    }
  }
  out[i] += acc;
}

/* The plan's charges into sorted order: q[i] = q_in[perm[i]]. */
__kernel void fgt_gather(uint n, __global const uint *perm, __global const REAL *q_in, __global REAL *q) {
  uint i = get_global_id(0);
  if (i < n) q[i] = q_in[perm[i]];
}

/* The potentials back into the caller's order: out[perm[i]] = pot[i]. */
__kernel void fgt_scatter(uint n, __global const uint *perm, __global const REAL *pot, __global REAL *out) {
  uint i = get_global_id(0);
  if (i < n) out[perm[i]] = pot[i];
}
