/* morton3d.h — 63-bit Morton keys of 3D points (21 bits per axis), the root
 * cube they are taken in, and a host radix sort of keys with its permutation. */
#ifndef FMMCL_MORTON3D_H
#define FMMCL_MORTON3D_H

#include <stddef.h>
#include <stdint.h>

#include "fmmcl.h"

/* Bits per axis: 3 * 21 = 63 bits fit one uint64_t, so the octree is at most
 * 21 levels below the root. */
#define FMMCL_MORTON_LEVELS 21
#define FMMCL_MORTON_CELLS_PER_AXIS (UINT32_C(1) << FMMCL_MORTON_LEVELS)

/* Bit layout: bit 3b+2 is bit b of x, 3b+1 of y, 3b of z, so the octant of
 * a child is (xbit << 2) | (ybit << 1) | zbit and the cell of a point at
 * level l is key >> 3*(21 - l). */
uint64_t fmmcl_morton3d_encode(uint32_t ix, uint32_t iy, uint32_t iz);
void fmmcl_morton3d_decode(uint64_t key, uint32_t *ix, uint32_t *iy, uint32_t *iz);

/* The cube keys are taken in: lower corner and side. */
typedef struct fmmcl_morton3d_cube {
  double origin[3];
  double width;
} fmmcl_morton3d_cube;

/* Smallest axis-aligned cube around every point of both sets (b may be NULL
 * with nb = 0), centred on their bounding box and enlarged by a relative
 * 2^-20 so no point lies on the upper faces. Coincident points get a unit
 * cube. Fails with FMMCL_ERROR_NONFINITE_INPUT on a NaN or infinity. */
fmmcl_status fmmcl_morton3d_bounding_cube(const double *a, size_t na, const double *b, size_t nb,
                                          fmmcl_morton3d_cube *cube);
/* The cube fmmcl_morton3d_bounding_cube makes of the points' box [lo, hi]
 * (finite points' smallest and largest coordinates), for a caller that
 * has read them already. */
fmmcl_status fmmcl_morton3d_cube_of_box(const double lo[3], const double hi[3], fmmcl_morton3d_cube *cube);

/* cube grown by factor (>= 1) from its lower corner: the tree's levels then
 * fall elsewhere on the points (fmmcl_tree3d_build_grown): with factor
 * 2^l / k the points' widest extent spans k cells of level l exactly.
 * factor 1 leaves it. */
void fmmcl_morton3d_cube_grow(fmmcl_morton3d_cube *cube, double factor);
/* Key of one point (clamped into the cube, so a point a rounding error
 * outside still gets the nearest boundary cell). */
uint64_t fmmcl_morton3d_point_key(const fmmcl_morton3d_cube *cube, const double *xyz);

/* Keys of n interleaved points (OpenMP). */
void fmmcl_morton3d_keys(const fmmcl_morton3d_cube *cube, const double *xyz, size_t n, uint64_t *keys);

/* Stable LSD radix sort of keys[n] in place; perm[i] receives the original
 * position of the i-th sorted key, so sorted[i] = caller[perm[i]].
 * FMMCL_ERROR_OUT_OF_MEMORY when the scratch buffers cannot be allocated. */
fmmcl_status fmmcl_morton3d_sort(uint64_t *keys, size_t *perm, size_t n);

#endif /* FMMCL_MORTON3D_H */
