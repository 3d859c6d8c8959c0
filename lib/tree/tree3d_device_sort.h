/* tree3d_device_sort.h — Morton keys and their stable radix sort on the
 * context's device (cl/tree.cl), and the octree build that uses them in
 * place of the host keys and sort. */
#ifndef FMMCL_TREE3D_DEVICE_SORT_H
#define FMMCL_TREE3D_DEVICE_SORT_H

#include "core/internal.h"
#include "tree/tree3d.h"

/* Whether ctx's device can sort n keys so that they equal the host's: the
 * keys are computed in double (fp64) and the permutation is a uint. */
int fmmcl_tree3d_device_sort_available(fmmcl_context ctx, size_t n);

/* keys[n] and perm[n] exactly as fmmcl_morton3d_keys(cube, xyz, n, keys)
 * followed by fmmcl_morton3d_sort(keys, perm, n) leave them, computed on
 * ctx's device. FMMCL_ERROR_UNSUPPORTED when not available (see above);
 * OpenCL failures carry the call in ctx's last error. */
fmmcl_status fmmcl_tree3d_device_sort(fmmcl_context ctx, const fmmcl_morton3d_cube *cube, const double *xyz,
                                      size_t n, uint64_t *keys, size_t *perm);

/* fmmcl_tree3d_build with the keys and sort on the device: same arguments,
 * same errors (messages in ctx's last error) and an identical tree.
 * *sort_seconds (may be NULL) receives the wall time of the root cube, keys
 * and sort, the rest being the host refinement. */
fmmcl_status fmmcl_tree3d_build_device(fmmcl_context ctx, size_t n_sources, const double *sources,
                                       size_t n_targets, const double *targets, size_t leaf_size,
                                       int max_level, fmmcl_tree3d **tree, double *sort_seconds);

/* What the device keeps of one sorted point set for the FMM: the caller's
 * coordinates xyz (3 doubles a point, the caller's order) and perm (uint,
 * sorted index -> caller's index) from the build, until
 * fmmcl_tree3d_device_pack turns them into packed (REAL4 per sorted
 * point; finite is 0 when a packed coordinate overflowed float). The
 * caller releases every buffer left. */
typedef struct fmmcl_tree3d_device_points {
  cl_mem xyz, perm, packed, packed_lo;
  int finite;
} fmmcl_tree3d_device_points;

/* fmmcl_tree3d_build_device that leaves the points on the device instead
 * of gathering them sorted on the host: the tree's source_xyz and
 * target_xyz are NULL, *src (and *tgt, when targets are given) keep xyz and
 * perm for fmmcl_tree3d_device_pack. On failure nothing is kept. The
 * bounding cube is grown by grow (fmmcl_tree3d_build_grown). */
fmmcl_status fmmcl_tree3d_build_device_kept(fmmcl_context ctx, size_t n_sources, const double *sources,
                                            size_t n_targets, const double *targets, size_t leaf_size,
                                            int max_level, double grow, fmmcl_tree3d **tree,
                                            double *sort_seconds, fmmcl_tree3d_device_points *src,
                                            fmmcl_tree3d_device_points *tgt);

/* The sort's program and kernels (cl/tree/tree.cl, built in double, the
 * program cached in the context), made once for the several device steps
 * of an update, which otherwise each make their own. */
typedef struct fmmcl_tree3d_device_kit fmmcl_tree3d_device_kit;
enum {
  FMMCL_TREE3D_STEP_RANGES,
  FMMCL_TREE3D_STEP_LEAF,
  FMMCL_TREE3D_STEP_CLOSE,
  FMMCL_TREE3D_STEP_BOX,
  FMMCL_TREE3D_STEP_LEAF_SORT,
  FMMCL_TREE3D_DEVICE_STEPS
};
fmmcl_status fmmcl_tree3d_device_kit_open(fmmcl_context ctx, fmmcl_tree3d_device_kit **kit);
void fmmcl_tree3d_device_kit_close(fmmcl_tree3d_device_kit *kit);
/* The kernel of one step (FMMCL_TREE3D_STEP_*) and the work-group size. */
cl_kernel fmmcl_tree3d_device_kit_kernel(const fmmcl_tree3d_device_kit *kit, int step, size_t *wgs);

/* Packs the n points p keeps as the 3D FMM's device coordinates
 * (lib/methods/laplace3d/fmm3d.h): packed[i] = ((x - origin) * inv_unit -
 * centre of leaf[i], 0) for the caller's point perm[i], computed as a
 * double-double (the device has fp64: it sorted) and rounded to REAL4 of
 * real_size exactly as the host packing rounds, packed_lo[i] what that
 * rounding lost (the caller releases both); leaf (int) is sorted point i's leaf
 * cell, center the FMM's REAL4 cell table (x, y, z, -) in that frame.
 * Releases p->xyz; keeps p->perm. kit may be NULL (one is made here). */
fmmcl_status fmmcl_tree3d_device_pack(fmmcl_context ctx, const fmmcl_tree3d_device_kit *kit,
                                      fmmcl_tree3d_device_points *p, size_t n, cl_mem leaf, cl_mem center,
                                      size_t real_size, const double origin[3], double inv_unit);

/* n points (3 doubles each) sent to a new device buffer *buf through
 * pinned staging, reading them once: lo and hi receive their box, *finite
 * whether every coordinate is finite (the box is then meaningless). */
fmmcl_status fmmcl_tree3d_device_upload(fmmcl_context ctx, const double *xyz, size_t n, cl_mem *buf,
                                        double lo[3], double hi[3], int *finite);
/* fmmcl_tree3d_device_upload's box and finiteness of n points (3 doubles
 * each) already in the device buffer xyz, reduced on the device. */
fmmcl_status fmmcl_tree3d_device_box(const fmmcl_tree3d_device_kit *kit, fmmcl_context ctx, cl_mem xyz,
                                     size_t n, double lo[3], double hi[3], int *finite);
/* The most points of a leaf that fmmcl_tree3d_device_leaf_sort sorts in
 * local memory (tree.cl's LEAF_SORT_CAP); larger leaves take a full sort. */
#define FMMCL_TREE3D_LEAF_SORT_CAP 1024
/* One point set's keys and sort left on the device for a tree that is
 * already built (new positions, fmmcl_tree3d_refit), from the coordinates
 * xyz sent by fmmcl_tree3d_device_upload or the caller's (taken over: p->xyz on success,
 * released on failure): p->perm as fmmcl_tree3d_build_device_kept keeps it,
 * and *keys the sorted keys (cl_ulong, n); nothing is read back. On
 * failure nothing is kept. levels > 0 sorts by the keys' top 3 * levels
 * bits only (the cells down to that level in order, their points in index
 * order): fmmcl_tree3d_device_leaf_sort then gives the full sort's order. */
fmmcl_status fmmcl_tree3d_device_sort_kept(const fmmcl_tree3d_device_kit *kit,
                                           const fmmcl_morton3d_cube *cube, cl_mem xyz, size_t n, int levels,
                                           fmmcl_tree3d_device_points *p, cl_mem *keys);

/* The steps after fmmcl_tree3d_device_sort_kept (tree3d_device_update.c).
 * ranges (2 * t->n_cells uint32, host): each cell's [first, end) in the n
 * sorted keys, for fmmcl_tree3d_refit. */
fmmcl_status fmmcl_tree3d_device_cell_ranges(const fmmcl_tree3d_device_kit *kit, fmmcl_context ctx,
                                             const fmmcl_tree3d *t, cl_mem keys, size_t n, uint32_t *ranges);
/* After fmmcl_tree3d_device_sort_kept by the top bits of a tree's levels:
 * the n (keys, perm) pairs within each leaf (begin: uint, n_leaves + 1,
 * as below) in the order of the full sort, so equal to a sort of every
 * bit. In local memory when no leaf holds more than
 * FMMCL_TREE3D_LEAF_SORT_CAP points (max_leaf), else by a full radix sort
 * of the pairs (*keys and *perm may then be other buffers). */
fmmcl_status fmmcl_tree3d_device_leaf_sort(const fmmcl_tree3d_device_kit *kit, fmmcl_context ctx,
                                           cl_mem *keys, cl_mem *perm, cl_mem begin, size_t n_leaves,
                                           size_t n, size_t max_leaf);
/* *leaf (int, n, made here): the leaf cell of each sorted point, from the
 * leaves' first points begin (uint, n_leaves + 1, the last n) and cell
 * indices leaves (int, n_leaves), in Morton order. */
fmmcl_status fmmcl_tree3d_device_point_leaves(const fmmcl_tree3d_device_kit *kit, fmmcl_context ctx,
                                              cl_mem begin, cl_mem leaves, size_t n_leaves, size_t n,
                                              cl_mem *leaf);
/* *close: how many of p's consecutive sorted points within a leaf are
 * closer than the leaf's largest offset estimate allows (e = max 2 u |x -
 * centre|, counted where e > ratio r): the count fmm3d_setup.c's
 * needs_low_parts takes on the host, operation for operation. centers: 3
 * doubles per leaf (world units), begin as above. */
fmmcl_status fmmcl_tree3d_device_close_pairs(const fmmcl_tree3d_device_kit *kit, fmmcl_context ctx,
                                             const fmmcl_tree3d_device_points *p, cl_mem begin,
                                             const double *centers, size_t n_leaves, double u, double ratio,
                                             size_t *close);

/* The radix sort and scan above for other callers (the FGT's binning), on
 * the caller's device buffers; ctx's device needs fp64 (tree.cl is built in
 * double). Stable sort of (keys[0], perm[0]) by the low `bits` bits of the
 * 64-bit keys (n < 2^32), ping-ponging through keys[1], perm[1]: *which
 * receives the index of the pair holding the result (0 when bits <= 0). */
fmmcl_status fmmcl_device_radix_sort(fmmcl_context ctx, cl_mem keys[2], cl_mem perm[2], size_t n, int bits,
                                     int *which);
/* Exclusive prefix sum of m uints in place (m < 2^32). */
fmmcl_status fmmcl_device_scan_exclusive(fmmcl_context ctx, cl_mem data, size_t m);

#endif /* FMMCL_TREE3D_DEVICE_SORT_H */
