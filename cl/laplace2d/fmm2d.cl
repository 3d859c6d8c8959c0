/* fmm2d.cl — the 2D Laplace FMM's complex-series operators other than M2L:
 * P2M, M2M, L2L, L2P and the near-field P2P (formulas and scaling in
 * lib/expansions2d.h), and the permutations of charges in and results out.
 *
 * Layout: expansions REAL2 (re, im) per coefficient, NROW = P + 1 per cell,
 * cells numbered level by level in Morton order (lib/quadtree2d.h), centres
 * relative to the root's (exact in float); points sorted by leaf, relative
 * to their leaf's centre: sources REAL4 (x, y, q, 0), targets REAL4 (x, y,
 * xlo, ylo), and in float the sources' lo parts REAL2 src_lo (the offset
 * is hi + lo, so a float carries it to about 48 bits);
 * out REAL4 (phi, dphi/dx, dphi/dy, 0) per target; binom[n * BSTRIDE + k]
 * = C(n, k) for n, k <= 2P. Work-item per (cell, coefficient): a cell's
 * coefficients are adjacent work-items, so reads and writes coalesce. */
#ifndef P
#define P 8
#endif
#define NROW (P + 1)
#define BSTRIDE (2 * P + 1)

#ifdef FMMCL_DOUBLE
typedef double2 REAL2;
#define LOG2D(x) log(x)
#define RECIP2D(x) ((REAL)1 / (x))
#else
typedef float2 REAL2;
/* special-function units (about 1e-7 relative), well inside float's tolerance */
#define LOG2D(x) native_log(x)
#define RECIP2D(x) native_recip(x)
#endif

static inline REAL2 cmul(REAL2 a, REAL2 b) { return (REAL2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

/* Leaf multipoles: coefficient k of leaf g / NROW sums q z^k over the leaf's
 * sources; z^k by a fixed-trip guarded loop so that the leaf's work-items
 * run in lockstep whatever their k. */
__kernel void p2m(const uint n_leaves, const uint leaf_off, const REAL inv_r,
                  __global const REAL4 *src, __global const uint *leaf_src, __global REAL2 *M) {
  const uint g = get_global_id(0), leaf = g / NROW, k = g % NROW;
  if (leaf >= n_leaves) return;
  REAL2 acc = (REAL2)(0, 0);
  for (uint j = leaf_src[leaf]; j < leaf_src[leaf + 1]; j++) {
    const REAL4 s = src[j];
    const REAL2 z = s.xy * inv_r;
    REAL2 zk = (REAL2)(1, 0);
    FMMCL_UNROLL(P)
    for (uint i = 0; i < P; i++) zk = i < k ? cmul(zk, z) : zk;
    acc += s.z * zk;
  }
  M[(size_t)(leaf_off + leaf) * NROW + k] = k == 0 ? acc : -acc / (REAL)k;
}

/* One level: parent cells off .. off+n_cells-1 (span leaves each) gather their four children
 * (child_off + 4m + c): Mp_l = sum_c (-M_0 u^l / l + sum_{k<=l} M_k 2^-k
 * u^(l-k) C(l-1, k-1)), u = (cc - cp) / r_parent. */
__kernel void m2m(const uint n_cells, const uint off, const uint child_off, const REAL inv_r,
                  __global const REAL2 *centre, __constant REAL *binom, __global REAL2 *M,
                  const uint span, __global const uint *leaf_src) {
  const uint g = get_global_id(0), m = g / NROW, l = g % NROW;
  if (m >= n_cells) return;
  /* a cell without sources (its span of leaves is empty): nothing to gather */
  if (leaf_src[(m + 1) * span] == leaf_src[m * span]) {
    M[(size_t)(off + m) * NROW + l] = (REAL2)(0, 0);
    return;
  }
  const REAL2 cp = centre[off + m];
  REAL2 acc = (REAL2)(0, 0);
  for (uint c = 0; c < 4; c++) {
    const uint child = child_off + 4 * m + c;
    const REAL2 u = (centre[child] - cp) * inv_r;
    __global const REAL2 *a = M + (size_t)child * NROW;
    REAL2 pw = (REAL2)(1, 0), s = (REAL2)(0, 0);
    for (uint k = l; k >= 1; k--) {
      s += binom[(l - 1) * BSTRIDE + k - 1] * pown((REAL)0.5, (int)k) * cmul(a[k], pw);
      pw = cmul(pw, u);
    }
    acc += l == 0 ? a[0] : s - a[0].x * pw / (REAL)l;
  }
  M[(size_t)(off + m) * NROW + l] = acc;
}

/* One level: children (child_off + j) take their parent's local expansion,
 * Lc_m += 2^-m sum_{l>=m} Lp_l C(l, m) v^(l-m), v = (cc - cp) / r_parent. */
__kernel void l2l(const uint n_children, const uint off, const uint child_off, const REAL inv_r,
                  __global const REAL2 *centre, __constant REAL *binom, __global REAL2 *L,
                  const uint span, __global const uint *leaf_tgt) {
  const uint g = get_global_id(0), j = g / NROW, mm = g % NROW;
  if (j >= n_children) return;
  /* a child without targets (span leaves each): its local is never read */
  if (leaf_tgt[(j + 1) * span] == leaf_tgt[j * span]) return;
  const uint child = child_off + j, parent = off + j / 4;
  const REAL2 v = (centre[child] - centre[parent]) * inv_r;
  __global const REAL2 *b = L + (size_t)parent * NROW;
  REAL2 pw = (REAL2)(1, 0), s = (REAL2)(0, 0);
  for (uint l = mm; l <= P; l++) {
    s += binom[l * BSTRIDE + mm] * cmul(b[l], pw);
    pw = cmul(pw, v);
  }
  L[(size_t)child * NROW + mm] += pown((REAL)0.5, (int)mm) * s;
}

/* Leaf local expansions at the targets: F and F' by Horner;
 * phi = -Re F, grad = (-Re F', Im F'). */
__kernel void l2p(const uint n_targets, const uint leaf_off, const REAL inv_r,
                  __global const REAL4 *tgt, __global const uint *tgt_leaf,
                  __global const REAL2 *L, __global REAL4 *out) {
  const uint i = get_global_id(0);
  if (i >= n_targets) return;
  const uint cell = leaf_off + tgt_leaf[i];
  const REAL2 z = tgt[i].xy * inv_r;
  __global const REAL2 *b = L + (size_t)cell * NROW;
  REAL2 F = (REAL2)(0, 0), dF = (REAL2)(0, 0);
  for (int l = P; l >= 0; l--) {
    dF = cmul(dF, z) + F;
    F = cmul(F, z) + b[l];
  }
  out[i] += (REAL4)(-F.x, -dF.x * inv_r, dF.y * inv_r, 0);
}

/* Near field: target i of leaf tgt_leaf[i] against the sources of each leaf
 * of that leaf's U list (itself included); a pair at distance 0 contributes
 * nothing. Neighbouring work-items share leaves, so source reads hit the
 * same cache lines. The target moves into each source leaf's frame once,
 * by the exact difference of the two centres; in float that sum's rounding
 * error (Fast2Sum: |dc| >= |t| where dc is not 0) joins the target's lo
 * part, and a pair's difference is (hi - hi) + (lo - lo): the first is
 * exact for close pairs (Sterbenz), so the difference keeps the digits a
 * single float frame would lose when the pair is much closer than a leaf. */
__kernel void p2p(const uint n_targets, __global const REAL4 *src, __global const REAL2 *src_lo,
                  __global const uint *leaf_src, __global const uint *u_begin,
                  __global const uint *u_leaf, __global const REAL4 *tgt,
                  __global const uint *tgt_leaf, const uint leaf_off,
                  __global const REAL2 *centre, __global REAL4 *out) {
  const uint i = get_global_id(0);
  if (i >= n_targets) return;
  const REAL4 t = tgt[i];
  const uint leaf = tgt_leaf[i];
  const REAL2 ct = centre[leaf_off + leaf];
  REAL pot = 0, gx = 0, gy = 0;
  for (uint u = u_begin[leaf]; u < u_begin[leaf + 1]; u++) {
    const uint sl = u_leaf[u], b = leaf_src[sl], e = leaf_src[sl + 1];
    const REAL2 dc = ct - centre[leaf_off + sl];
    const REAL tx = t.x + dc.x, ty = t.y + dc.y;
#ifndef FMMCL_DOUBLE
    const REAL lx = (t.x - (tx - dc.x)) + t.z, ly = (t.y - (ty - dc.y)) + t.w;
#endif
    for (uint j = b; j < e; j++) {
      const REAL4 s = src[j];
#ifdef FMMCL_DOUBLE
      const REAL dx = tx - s.x, dy = ty - s.y;
#else
      const REAL2 slo = src_lo[j];
      const REAL dx = (tx - s.x) + (lx - slo.x), dy = (ty - s.y) + (ly - slo.y);
#endif
      const REAL r2 = dx * dx + dy * dy;
      const bool live = r2 > (REAL)0;
      const REAL qr2 = live ? s.z * RECIP2D(r2) : (REAL)0;
      pot -= live ? (REAL)0.5 * s.z * LOG2D(r2) : (REAL)0;
      gx -= qr2 * dx;
      gy -= qr2 * dy;
    }
  }
  out[i] += (REAL4)(pot, gx, gy, 0);
}

/* Charges arrive in the caller's order: sorted source i takes q[perm[i]]
 * into its (x, y, q, 0), so an execute uploads n REALs, not n REAL4s, and
 * the host does no random-order gather. */
__kernel void fmm2d_put_charges(__global const REAL *q, __global const uint *perm, const uint n,
                                __global REAL4 *src) {
  const uint i = get_global_id(0);
  if (i < n) src[i].z = q[perm[i]];
}

/* Results back in the caller's order, so the host reads them straight
 * through: random writes are cheap here and slow on the host. */
__kernel void fmm2d_unsort(__global const REAL4 *out, __global const uint *perm, const uint n,
                           __global REAL4 *dst) {
  const uint i = get_global_id(0);
  if (i < n) dst[perm[i]] = out[i];
}
