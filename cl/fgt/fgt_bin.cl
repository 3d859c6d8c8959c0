/* fgt_bin.cl — the FGT's box binning on the device: each point's grid cell,
 * bit-packed keys of a group of axes for the radix sort of cl/tree.cl,
 * segment flags of the sorted points, box ranges, box cells, and the sorted
 * points packed for cl/fgt.cl. lib/fgt_bin_device.c launches it, built with
 * -DFMMCL_DOUBLE=1 -DDIM=d so that every cell equals the host's
 * (lib/fgt_setup.c): same division, subtraction, floor and clamp in double.
 *
 * The grid of d <= 8 axes can be huge and sparse, so no key of the whole
 * tuple need fit 64 bits: the host splits the axes into groups whose bit
 * fields fit 63 bits and sorts by the last group first; each sort is
 * stable, so after the first group's sort the order is lexicographic in
 * the cell tuple, as the host's. Coordinates x[i * DIM + k] (the caller's
 * layout, unscaled); cells are scaled: floor((x / h - origin) / side). */

#ifndef DIM
#define DIM 3
#endif

/* the host rounds (x / h - origin) / side without contraction */
#pragma OPENCL FP_CONTRACT OFF

long cell_of(__global const double *x, uint i, int k, double h, double origin, double side) {
  long c = (long)floor((x[(size_t)i * DIM + k] / h - origin) / side);
  return c < 0 ? 0 : c;
}

/* keys[i] = cells of axes lo..hi-1 of point perm[i], each in a field of
 * bits[k] bits, axis lo most significant. first != 0: perm[i] = i is
 * written too (the first group's sort starts from the caller's order). */
__kernel void fgt_bin_keys(__global const double *x, uint n, __global uint *perm, int first, int lo, int hi,
                           double h, double side, __constant double *origin, __constant int *bits,
                           __global ulong *keys) {
  uint i = get_global_id(0);
  if (i >= n) return;
  uint j = first ? i : perm[i];
  if (first) perm[i] = i;
  ulong key = 0;
  for (int k = lo; k < hi; k++) key = key << bits[k] | (ulong)cell_of(x, j, k, h, origin[k], side);
  keys[i] = key;
}

/* flags[i] = 1 where sorted point i starts a box (its cell tuple differs
 * from point i-1's). */
__kernel void fgt_bin_flags(__global const double *x, uint n, __global const uint *perm, double h, double side,
                            __constant double *origin, __global uint *flags) {
  uint i = get_global_id(0);
  if (i >= n) return;
  uint f = i == 0;
  for (int k = 0; k < DIM && !f; k++)
    f = cell_of(x, perm[i], k, h, origin[k], side) != cell_of(x, perm[i - 1], k, h, origin[k], side);
  flags[i] = f;
}

/* From the flags and their exclusive scan: owner[i] = box of sorted point
 * i, start[b] = first point of box b, start[nbox] = n. */
__kernel void fgt_bin_boxes(uint n, __global const uint *flags, __global const uint *scan, __global uint *owner,
                            __global uint *start) {
  uint i = get_global_id(0);
  if (i >= n) return;
  uint b = scan[i] + flags[i] - 1;
  owner[i] = b;
  if (flags[i]) start[b] = i;
  if (i == n - 1) start[b + 1] = n;
}

/* cell[b * DIM + k] of each box, from its first point. */
__kernel void fgt_bin_cells(__global const double *x, uint nbox, __global const uint *perm,
                            __global const uint *start, double h, double side, __constant double *origin,
                            __global long *cell) {
  uint b = get_global_id(0);
  if (b >= nbox) return;
  for (int k = 0; k < DIM; k++) cell[(size_t)b * DIM + k] = cell_of(x, perm[start[b]], k, h, origin[k], side);
}

/* The sorted scaled coordinates for cl/fgt.cl relative to their box's
 * frame, structure of arrays (out[k * n + i] = (x[perm[i] * DIM + k] / h -
 * origin[k]) - frame[owner[i] * DIM + k]), the offset rounded to float or
 * kept in double as the host's would be. */
#define PACK(name, T)                                                                                        \
  __kernel void name(__global const double *x, uint n, __global const uint *perm, double h,                  \
                     __constant double *origin, __global const uint *owner, __global const double *frame,    \
                     __global T *out) {                                                                      \
    uint i = get_global_id(0);                                                                               \
    if (i >= n) return;                                                                                      \
    for (int k = 0; k < DIM; k++)                                                                            \
      out[(size_t)k * n + i] = (T)((x[(size_t)perm[i] * DIM + k] / h - origin[k]) - frame[(size_t)owner[i] * DIM + k]); \
  }
PACK(fgt_bin_pack_float, float)
PACK(fgt_bin_pack_double, double)
