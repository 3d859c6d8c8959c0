/* tree.cl — device side of the octree build: 63-bit Morton keys of points
 * (21 bits per axis, the same layout and rounding as lib/morton3d.c) and a
 * stable LSD radix sort of 64-bit keys with a uint payload (the permutation).
 * lib/tree3d_device_sort.c launches it, built with -DFMMCL_DOUBLE=1 so the
 * keys equal the host's. Portable OpenCL 1.2: local atomics and barriers
 * only, no subgroups. Once the tree is built, fmmcl_tree3d_device_pack_*
 * leave the sorted points packed for the FMM's kernels on the device, in
 * their leaves' local frames.
 *
 * Radix sort after Satish, Harris & Garland (IPDPS 2009): each work-group owns
 * a block of TILES * WGS consecutive keys. Per pass of RADIX_BITS bits:
 *   1. radix_histogram: per-group digit counts, stored digit-major
 *      (hist[d * n_groups + g]) so that one exclusive scan of hist gives every
 *      (digit, group) its first output position, in an order that keeps the
 *      sort stable;
 *   2. scan_exclusive_blocks / scan_add_block_offsets: that exclusive scan;
 *   3. radix_scatter: each tile is sorted by digit in local memory (RADIX_BITS
 *      stable 1-bit splits), so equal digits leave as contiguous runs and the
 *      global writes coalesce.
 *
 * How the host launches it (n keys, G = ceil(n / (WGS * TILES)) groups, all
 * launches with local size WGS, global size a multiple of WGS):
 *   morton_keys(xyz, n, ox, oy, oz, scale, keys, perm): global >= n (rounded
 *     up to WGS); scale = 2^21 / cube.width computed in double on the host;
 *     writes keys[i] and perm[i] = i.
 *   for shift = 0; shift < key_bits; shift += RADIX_BITS:   (key_bits = 63,
 *       or 3 * levels when only the top levels are wanted: then sort
 *       keys >> 3 * (21 - levels) instead; a pass whose digit is constant can
 *       be skipped as on the host)
 *     radix_histogram(keys_in, n, shift, hist)            global G * WGS
 *     exclusive scan of hist, m = RADIX * G entries:
 *       scan_exclusive_blocks(hist, m, sums)              global ceil(m / WGS) * WGS
 *       if ceil(m / WGS) > 1: scan sums (length ceil(m / WGS)) the same way,
 *         recursively, then scan_add_block_offsets(hist, m, sums)
 *     radix_scatter(keys_in, perm_in, keys_out, perm_out, n, shift, hist)
 *                                                          global G * WGS
 *     swap in and out.
 *   16 passes of 4 bits (63-bit keys) end in the original buffers. perm[i]
 *   is then the caller's index of sorted point i, as fmmcl_morton3d_sort
 *   returns it on the host (both sorts are stable, so the permutations are
 *   identical for equal keys too).
 * Buffers: keys 2 x n ulong, perm 2 x n uint, hist RADIX * G uint, scan sums
 * ceil(RADIX * G / WGS) uint per recursion level. n < 2^32.
 *
 * Host and device keys agree bit for bit in double precision (same
 * subtraction, multiplication, floor and clamp). In single precision a point
 * within a rounding error of a cell face may land in the neighbouring cell;
 * a device tree is then still a valid tree of the points as the device sees
 * them, and tests comparing with the host should build the host tree from
 * the float-rounded coordinates. */

#ifndef WGS
#define WGS 256          /* work-group size: a power of two, >= RADIX */
#endif
#ifndef TILES
#define TILES 8          /* tiles of WGS keys per work-group block */
#endif
#ifndef RADIX_BITS
#define RADIX_BITS 4     /* bits per pass; the local sort costs one split per bit */
#endif
#ifndef LEAF_SORT_CAP
#define LEAF_SORT_CAP 1024 /* most points tree_leaf_sort sorts in one leaf: a power of two */
#endif
#ifndef POINT_STRIDE
#define POINT_STRIDE 3   /* REALs per point in the coordinate array (4 for x,y,z,q) */
#endif

/* a fused multiply-add would round (x - origin) * scale differently from
 * the host, moving points that sit on a cell face */
#pragma OPENCL FP_CONTRACT OFF

#define RADIX (1 << RADIX_BITS)
#define DIGIT_MASK ((ulong)(RADIX - 1))
#define MORTON_CELLS_PER_AXIS (1u << 21)

/* ---- Morton keys ---------------------------------------------------------- */

/* Spreads the low 21 bits of v so that bit b lands on bit 3b. */
ulong spread_by_3(uint v) {
  ulong x = (ulong)(v & 0x1fffffu);
  x = (x | x << 32) & 0x1f00000000ffffUL;
  x = (x | x << 16) & 0x1f0000ff0000ffUL;
  x = (x | x << 8) & 0x100f00f00f00f00fUL;
  x = (x | x << 4) & 0x10c30c30c30c30c3UL;
  x = (x | x << 2) & 0x1249249249249249UL;
  return x;
}

/* Integer cell coordinate at the finest level, clamped into the cube. */
uint finest_coordinate(REAL x, REAL origin, REAL scale) {
  REAL t = floor((x - origin) * scale);
  if (!(t >= (REAL)0)) return 0u;
  if (t >= (REAL)(MORTON_CELLS_PER_AXIS - 1)) return MORTON_CELLS_PER_AXIS - 1;
  return (uint)t;
}

/* keys[i] = Morton key of point i (x bit at 3b+2, y at 3b+1, z at 3b);
 * perm[i] = i, the payload the sort carries. */
__kernel void morton_keys(__global const REAL *xyz, uint n, REAL ox, REAL oy, REAL oz, REAL scale,
                          __global ulong *keys, __global uint *perm) {
  uint i = get_global_id(0);
  if (i >= n) return;
  __global const REAL *p = xyz + (size_t)i * POINT_STRIDE;
  keys[i] = spread_by_3(finest_coordinate(p[0], ox, scale)) << 2 |
            spread_by_3(finest_coordinate(p[1], oy, scale)) << 1 |
            spread_by_3(finest_coordinate(p[2], oz, scale));
  perm[i] = i;
}

/* ---- sorted points for the FMM ------------------------------------------- */

/* out[i] = the caller's point perm[i] in the 3D FMM's device frame
 * (lib/methods/laplace3d/fmm3d.h): (x - origin) * inv_unit minus the centre
 * of its leaf leaf[i] (center[], exact in either precision), computed as a
 * double-double (TwoSum, TwoProd: exact but for the last product's 2^-106)
 * and only then rounded to the FMM's REAL4 (float or double), lo[i]
 * receiving what that rounding lost, as the host's packing does bit for
 * bit (no contraction: FP_CONTRACT OFF above); w = 0. So a leaf's close
 * pairs keep their digits however far the root's centre. A packed
 * coordinate that is not finite sets *bad. */
static inline double2 frame_offset(REAL x, REAL o, REAL inv_unit, REAL c) {
  const REAL a = x - o, ab = a - x, ae = (x - (a - ab)) + (-o - ab);
  const REAL h = a * inv_unit, he = fma(a, inv_unit, -h) + ae * inv_unit;
  const REAL d = h - c, db = d - h, de = ((h - (d - db)) + (-c - db)) + he;
  const REAL hi = d + de;
  return (double2)(hi, de - (hi - d));
}
#define DEVICE_PACK(name, T, T4)                                                                     \
  __kernel void name(__global const REAL *xyz, __global const uint *perm, uint n,                    \
                     __global const int *leaf, __global const T4 *center, REAL ox, REAL oy, REAL oz, \
                     REAL inv_unit, __global T4 *out, __global T4 *lo, __global int *bad) {          \
    uint i = get_global_id(0);                                                                       \
    if (i >= n) return;                                                                              \
    __global const REAL *p = xyz + (size_t)perm[i] * POINT_STRIDE;                                   \
    const T4 c = center[leaf[i]];                                                                    \
    const double2 fx = frame_offset(p[0], ox, inv_unit, (REAL)c.x),                                    \
                fy = frame_offset(p[1], oy, inv_unit, (REAL)c.y),                                    \
                fz = frame_offset(p[2], oz, inv_unit, (REAL)c.z);                                    \
    T4 v = (T4)((T)fx.x, (T)fy.x, (T)fz.x, (T)0);                                                    \
    lo[i] = (T4)((T)((fx.x - (REAL)v.x) + fx.y), (T)((fy.x - (REAL)v.y) + fy.y),                     \
                 (T)((fz.x - (REAL)v.z) + fz.y), (T)0);                                              \
    if (!isfinite(v.x) || !isfinite(v.y) || !isfinite(v.z)) *bad = 1;                                \
    out[i] = v;                                                                                      \
  }
DEVICE_PACK(fmmcl_tree3d_device_pack_float, float, float4)
DEVICE_PACK(fmmcl_tree3d_device_pack_double, double, double4)

/* ---- new positions for a built tree (lib/tree/tree3d_device_update.c) ---- */

/* First index in [lo, hi) of the sorted keys with key >= bound. */
static inline uint lower_bound_key(__global const ulong *keys, uint lo, uint hi, ulong bound) {
  while (lo < hi) {
    const uint mid = lo + (hi - lo) / 2;
    if (keys[mid] < bound) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* ranges[c] = the sorted points of cell c: the keys in [bounds[c].x,
 * bounds[c].y) (the cell's key at the finest level and its successor's). */
__kernel void tree_cell_ranges(__global const ulong *keys, uint n, __global const ulong2 *bounds,
                               uint n_cells, __global uint2 *ranges) {
  const uint c = get_global_id(0);
  if (c >= n_cells) return;
  const ulong2 b = bounds[c];
  const uint lo = lower_bound_key(keys, 0, n, b.x);
  ranges[c] = (uint2)(lo, lower_bound_key(keys, lo, n, b.y));
}

/* leaf[i] = the leaf cell holding sorted point i: leaves[g] for the last g
 * with begin[g] <= i (begin: n_leaves + 1 entries, the leaves' ranges in
 * Morton order, tiling [0, n); an empty leaf never is the last). */
__kernel void tree_point_leaf(__global const uint *begin, __global const int *leaves, uint n_leaves, uint n,
                              __global int *leaf) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  uint lo = 0, hi = n_leaves;
  while (lo < hi) {
    const uint mid = lo + (hi - lo) / 2;
    if (begin[mid] <= i) lo = mid + 1;
    else hi = mid;
  }
  leaf[i] = leaves[lo - 1];
}

/* The count behind the FMM's choice of compensated offsets
 * (needs_low_parts in lib/methods/laplace3d/fmm3d_setup.c, operation for
 * operation): per leaf g (points [begin[g], begin[g+1]) of the sorted
 * order, the caller's point perm[i]; centre[g] in world units), e = the
 * largest 2 u |x - centre|, and the consecutive pairs at distance r > 0
 * with e > ratio r are added to *close. One work-item a leaf. */
__kernel void tree_close_pairs(__global const REAL *xyz, __global const uint *perm, __global const uint *begin,
                               __global const REAL *center, uint n_leaves, REAL u, REAL ratio,
                               __global uint *close) {
  const uint g = get_global_id(0);
  if (g >= n_leaves) return;
  const uint a = begin[g], b = begin[g + 1];
  const REAL cx = center[3 * g], cy = center[3 * g + 1], cz = center[3 * g + 2];
  REAL e = 0;
  for (uint i = a; i < b; i++) {
    __global const REAL *p = xyz + (size_t)perm[i] * POINT_STRIDE;
    REAL off2 = 0;
    off2 += (p[0] - cx) * (p[0] - cx);
    off2 += (p[1] - cy) * (p[1] - cy);
    off2 += (p[2] - cz) * (p[2] - cz);
    e = fmax(e, 2 * u * sqrt(off2));
  }
  uint count = 0;
  for (uint i = a + 1; i < b; i++) {
    __global const REAL *p = xyz + (size_t)perm[i] * POINT_STRIDE;
    __global const REAL *q = xyz + (size_t)perm[i - 1] * POINT_STRIDE;
    REAL r2 = 0;
    r2 += (p[0] - q[0]) * (p[0] - q[0]);
    r2 += (p[1] - q[1]) * (p[1] - q[1]);
    r2 += (p[2] - q[2]) * (p[2] - q[2]);
    if (r2 > 0 && !(e <= ratio * sqrt(r2))) count++;
  }
  if (count) atomic_add(close, count);
}

/* The points' bounding box and finiteness, a partial per work-group:
 * out[7 g ..] = the least x, y, z, the greatest x, y, z, and 1 where one
 * of the group's coordinates is NaN or infinite (else 0). min and max are
 * exact, so neither the grid's size nor the reduction's order changes the
 * box the host finishes from the partials. */
__kernel void tree_box(__global const REAL *xyz, uint n, __global REAL *out) {
  __local REAL red[6][WGS];
  __local int bad;
  const uint lid = get_local_id(0);
  REAL b[6] = {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int ok = 1;
  if (lid == 0) bad = 0;
  for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
    __global const REAL *p = xyz + (size_t)i * POINT_STRIDE;
    for (int d = 0; d < 3; d++) {
      const REAL x = p[d];
      ok = ok && isfinite(x);
      b[d] = x < b[d] ? x : b[d];
      b[3 + d] = x > b[3 + d] ? x : b[3 + d];
    }
  }
  for (int d = 0; d < 6; d++) red[d][lid] = b[d];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (!ok) bad = 1;
  for (uint stride = WGS / 2; stride > 0; stride >>= 1) {
    if (lid < stride)
      for (int d = 0; d < 6; d++) {
        const REAL o = red[d][lid + stride];
        red[d][lid] = d < 3 ? (o < red[d][lid] ? o : red[d][lid]) : (o > red[d][lid] ? o : red[d][lid]);
      }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid < 6) out[7 * get_group_id(0) + lid] = red[lid][0];
  if (lid == 6) out[7 * get_group_id(0) + 6] = bad ? 1 : 0;
}

/* Finishes a sort by the keys' top bits only (the levels a tree has):
 * within each leaf g (sorted points [begin[g], begin[g+1]), at most
 * LEAF_SORT_CAP of them), the (key, perm) pairs ordered by the whole key,
 * equal keys by perm, which is the order the full stable sort from perm[i]
 * = i gives. Bitonic sort in local memory, one work-group a leaf. */
__kernel void tree_leaf_sort(__global ulong *keys, __global uint *perm, __global const uint *begin) {
  __local ulong lk[LEAF_SORT_CAP];
  __local uint lp[LEAF_SORT_CAP];
  const uint g = get_group_id(0), lid = get_local_id(0);
  const uint a = begin[g], m = begin[g + 1] - a;
  if (m < 2) return; /* uniform across the group */
  uint p2 = 2;
  while (p2 < m) p2 <<= 1;
  for (uint i = lid; i < p2; i += WGS) {
    lk[i] = i < m ? keys[a + i] : (ulong)-1;
    lp[i] = i < m ? perm[a + i] : (uint)-1;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint k = 2; k <= p2; k <<= 1)
    for (uint j = k >> 1; j > 0; j >>= 1) {
      for (uint t = lid; t < p2 / 2; t += WGS) {
        const uint i = 2 * j * (t / j) + t % j, l = i + j;
        const ulong ki = lk[i], kl = lk[l];
        const uint pi = lp[i], pl = lp[l];
        const int greater = ki > kl || (ki == kl && pi > pl);
        if (greater == ((i & k) == 0)) lk[i] = kl, lk[l] = ki, lp[i] = pl, lp[l] = pi;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  for (uint i = lid; i < m; i += WGS) keys[a + i] = lk[i], perm[a + i] = lp[i];
}

/* ---- local scan ----------------------------------------------------------- */

/* Exclusive prefix sum of one value per work-item over the work-group
 * (Hillis-Steele in local memory); *total receives the sum of all. Every
 * work-item must call it. */
uint group_exclusive_scan(uint v, __local uint *buf, uint *total) {
  uint lid = get_local_id(0);
  buf[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint offset = 1; offset < WGS; offset <<= 1) {
    uint add = lid >= offset ? buf[lid - offset] : 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    buf[lid] += add;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  uint inclusive = buf[lid];
  *total = buf[WGS - 1];
  barrier(CLK_LOCAL_MEM_FENCE);
  return inclusive - v;
}

/* ---- scan of the histogram ------------------------------------------------ */

/* Exclusive scan of each block of WGS entries of data in place; sums[g]
 * receives block g's total for the next level. */
__kernel void scan_exclusive_blocks(__global uint *data, uint m, __global uint *sums) {
  __local uint buf[WGS];
  uint i = get_global_id(0), total;
  uint v = i < m ? data[i] : 0u;
  uint ex = group_exclusive_scan(v, buf, &total);
  if (i < m) data[i] = ex;
  if (get_local_id(0) == 0) sums[get_group_id(0)] = total;
}

/* Adds the scanned block totals back: data[i] += offsets[block of i]. */
__kernel void scan_add_block_offsets(__global uint *data, uint m, __global const uint *offsets) {
  uint i = get_global_id(0);
  if (i < m) data[i] += offsets[get_group_id(0)];
}

/* ---- radix sort passes ---------------------------------------------------- */

uint digit_of(ulong key, uint shift) { return (uint)((key >> shift) & DIGIT_MASK); }

/* hist[d * n_groups + g] = number of keys of block g whose digit is d. */
__kernel void radix_histogram(__global const ulong *keys, uint n, uint shift, __global uint *hist) {
  __local uint counts[RADIX];
  uint lid = get_local_id(0), g = get_group_id(0), n_groups = get_num_groups(0);
  if (lid < RADIX) counts[lid] = 0u;
  barrier(CLK_LOCAL_MEM_FENCE);
  size_t base = (size_t)g * (WGS * TILES);
  for (uint t = 0; t < TILES; t++) {
    size_t i = base + (size_t)t * WGS + lid;
    if (i < n) atomic_inc(&counts[digit_of(keys[i], shift)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid < RADIX) hist[lid * n_groups + g] = counts[lid];
}

/* Stably sorts the work-group's (key, value, digit) triples in local memory
 * by digit, one bit at a time: zeros keep their order ahead of ones. */
void local_sort_by_digit(__local ulong *lkeys, __local uint *lvals, __local uint *ldigits,
                                __local uint *scan_buf) {
  uint lid = get_local_id(0);
  for (uint b = 0; b < RADIX_BITS; b++) {
    ulong key = lkeys[lid];
    uint val = lvals[lid], d = ldigits[lid], bit = (d >> b) & 1u, zeros;
    uint zeros_before = group_exclusive_scan(1u - bit, scan_buf, &zeros);
    uint pos = bit ? zeros + (lid - zeros_before) : zeros_before;
    /* the scan ended on a barrier, so every read above happened before these writes */
    lkeys[pos] = key;
    lvals[pos] = val;
    ldigits[pos] = d;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/* Writes block g's keys to their sorted positions: the scanned histogram
 * gives each digit's first position for this block; within the block, tiles
 * are taken in order and each tile's equal digits in order, so the pass is
 * stable. */
__kernel void radix_scatter(__global const ulong *keys_in, __global const uint *vals_in,
                            __global ulong *keys_out, __global uint *vals_out, uint n, uint shift,
                            __global const uint *hist_scanned) {
  __local ulong lkeys[WGS];
  __local uint lvals[WGS], ldigits[WGS], scan_buf[WGS];
  __local uint next_position[RADIX], run_start[RADIX], run_end[RADIX];
  uint lid = get_local_id(0), g = get_group_id(0), n_groups = get_num_groups(0);
  if (lid < RADIX) next_position[lid] = hist_scanned[lid * n_groups + g];
  size_t base = (size_t)g * (WGS * TILES);
  for (uint t = 0; t < TILES; t++) {
    size_t first = base + (size_t)t * WGS;
    if (first >= n) break;  /* uniform across the group */
    uint valid = (uint)min((size_t)WGS, n - first);
    size_t i = first + lid;
    /* padding takes the largest digit so the stable local sort puts it
     * after every valid key: positions < valid hold exactly the valid keys */
    ulong key = lid < valid ? keys_in[i] : 0UL;
    lkeys[lid] = key;
    lvals[lid] = lid < valid ? vals_in[i] : 0u;
    ldigits[lid] = lid < valid ? digit_of(key, shift) : (uint)(RADIX - 1);
    if (lid < RADIX) run_start[lid] = run_end[lid] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    local_sort_by_digit(lkeys, lvals, ldigits, scan_buf);
    uint d = ldigits[lid];
    if (lid < valid) {
      if (lid == 0 || ldigits[lid - 1] != d) run_start[d] = lid;
      if (lid == valid - 1 || ldigits[lid + 1] != d) run_end[d] = lid + 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < valid) {
      uint pos = next_position[d] + (lid - run_start[d]);
      keys_out[pos] = lkeys[lid];
      vals_out[pos] = lvals[lid];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < RADIX) next_position[lid] += run_end[lid] - run_start[lid];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
