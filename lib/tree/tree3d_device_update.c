/* tree3d_device_update.c — the device steps that move a built octree to
 * new positions (cl/tree/tree.cl, after fmmcl_tree3d_device_sort_kept):
 * the cells' ranges in the newly sorted keys, each sorted point's leaf, and
 * the close-pair count behind the 3D FMM's compensated offsets, and the
 * box of points already on the device. */
#include <math.h>
#include <stdlib.h>

#include "tree/tree3d_device_sort.h"

#define M_ FMMCL_ARG_MEM
#define U_ FMMCL_ARG_UINT
#define D_ FMMCL_ARG_DOUBLE

fmmcl_status fmmcl_tree3d_device_cell_ranges(const fmmcl_tree3d_device_kit *kit, fmmcl_context ctx,
                                             const fmmcl_tree3d *t, cl_mem keys, size_t n, uint32_t *ranges) {
  const size_t nc = t->n_cells;
  cl_ulong *bounds = malloc(2 * nc * sizeof *bounds);
  if (!bounds) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "tree update: out of host memory");
  for (size_t c = 0; c < nc; c++) {
    const int shift = 3 * (FMMCL_MORTON_LEVELS - t->cells[c].level);
    bounds[2 * c] = t->cells[c].key << shift, bounds[2 * c + 1] = (t->cells[c].key + 1) << shift;
  }
  cl_mem b = NULL, r = NULL;
  size_t wgs = 0;
  cl_kernel k = fmmcl_tree3d_device_kit_kernel(kit, FMMCL_TREE3D_STEP_RANGES, &wgs);
  fmmcl_status st =
      fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 2 * nc * sizeof *bounds, bounds, &b);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_WRITE_ONLY, 2 * nc * sizeof(cl_uint), NULL, &r);
  if (!st) st = FMMCL_KERNEL_ARGS(ctx, k, 0, M_(keys), U_(n), M_(b), U_(nc), M_(r));
  if (!st) st = fmmcl_launch(ctx, k, fmmcl_round_up(nc, wgs), wgs, NULL, NULL);
  if (!st) {
    cl_int err =
        clEnqueueReadBuffer(ctx->queue, r, CL_TRUE, 0, 2 * nc * sizeof(cl_uint), ranges, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "tree update: reading the cell ranges: %s",
                      fmmcl_cl_error_name(err));
  }
  free(bounds);
  fmmcl_release(&b), fmmcl_release(&r);
  return st;
}

fmmcl_status fmmcl_tree3d_device_point_leaves(const fmmcl_tree3d_device_kit *kit, fmmcl_context ctx,
                                              cl_mem begin, cl_mem leaves, size_t n_leaves, size_t n,
                                              cl_mem *leaf) {
  size_t wgs = 0;
  cl_kernel k = fmmcl_tree3d_device_kit_kernel(kit, FMMCL_TREE3D_STEP_LEAF, &wgs);
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (n ? n : 1) * sizeof(cl_int), NULL, leaf);
  if (!st) st = FMMCL_KERNEL_ARGS(ctx, k, 0, M_(begin), M_(leaves), U_(n_leaves), U_(n), M_(*leaf));
  if (!st && n) st = fmmcl_launch(ctx, k, fmmcl_round_up(n, wgs), wgs, NULL, NULL);
  if (st) fmmcl_release(leaf);
  return st;
}

fmmcl_status fmmcl_tree3d_device_close_pairs(const fmmcl_tree3d_device_kit *kit, fmmcl_context ctx,
                                             const fmmcl_tree3d_device_points *p, cl_mem begin,
                                             const double *centers, size_t n_leaves, double u, double ratio,
                                             size_t *close) {
  cl_mem c = NULL, count = NULL;
  cl_uint zero = 0, result = 0;
  size_t wgs = 0;
  cl_kernel k = fmmcl_tree3d_device_kit_kernel(kit, FMMCL_TREE3D_STEP_CLOSE, &wgs);
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                     3 * (n_leaves ? n_leaves : 1) * sizeof(double), centers, &c);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero, &count);
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, k, 0, M_(p->xyz), M_(p->perm), M_(begin), M_(c), U_(n_leaves), D_(u),
                           D_(ratio), M_(count));
  if (!st && n_leaves) st = fmmcl_launch(ctx, k, fmmcl_round_up(n_leaves, wgs), wgs, NULL, NULL);
  if (!st) {
    cl_int err = clEnqueueReadBuffer(ctx->queue, count, CL_TRUE, 0, sizeof result, &result, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "tree update: reading the close pairs: %s",
                      fmmcl_cl_error_name(err));
  }
  *close = result;
  fmmcl_release(&c), fmmcl_release(&count);
  return st;
}

fmmcl_status fmmcl_tree3d_device_box(const fmmcl_tree3d_device_kit *kit, fmmcl_context ctx, cl_mem xyz,
                                     size_t n, double lo[3], double hi[3], int *finite) {
  size_t wgs = 0;
  cl_kernel k = fmmcl_tree3d_device_kit_kernel(kit, FMMCL_TREE3D_STEP_BOX, &wgs);
  /* a few groups per compute unit, each striding over the points: few
   * partials for the host to finish */
  size_t groups = (n + wgs - 1) / wgs,
         most = 4 * (ctx->dev.info.compute_units ? ctx->dev.info.compute_units : 64);
  if (groups > most) groups = most;
  if (groups < 1) groups = 1;
  double *part = malloc(7 * groups * sizeof *part);
  cl_mem out = NULL;
  fmmcl_status st =
      part ? FMMCL_SUCCESS : fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "tree update: out of host memory");
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_WRITE_ONLY, 7 * groups * sizeof *part, NULL, &out);
  if (!st) st = FMMCL_KERNEL_ARGS(ctx, k, 0, M_(xyz), U_(n), M_(out));
  if (!st) st = fmmcl_launch(ctx, k, groups * wgs, wgs, NULL, NULL);
  if (!st) {
    cl_int err =
        clEnqueueReadBuffer(ctx->queue, out, CL_TRUE, 0, 7 * groups * sizeof *part, part, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "tree update: reading the points' box: %s",
                      fmmcl_cl_error_name(err));
  }
  int ok = 1;
  for (int d = 0; d < 3; d++) lo[d] = INFINITY, hi[d] = -INFINITY;
  for (size_t g = 0; !st && g < groups; g++) {
    const double *b = part + 7 * g;
    for (int d = 0; d < 3; d++)
      lo[d] = b[d] < lo[d] ? b[d] : lo[d], hi[d] = b[3 + d] > hi[d] ? b[3 + d] : hi[d];
    ok = ok && b[6] == 0;
  }
  *finite = !st && ok;
  free(part);
  fmmcl_release(&out);
  return st;
}

fmmcl_status fmmcl_tree3d_device_leaf_sort(const fmmcl_tree3d_device_kit *kit, fmmcl_context ctx,
                                           cl_mem *keys, cl_mem *perm, cl_mem begin, size_t n_leaves,
                                           size_t n, size_t max_leaf) {
  if (n_leaves == 0 || n < 2) return FMMCL_SUCCESS;
  if (max_leaf <= FMMCL_TREE3D_LEAF_SORT_CAP) {
    size_t wgs = 0;
    cl_kernel k = fmmcl_tree3d_device_kit_kernel(kit, FMMCL_TREE3D_STEP_LEAF_SORT, &wgs);
    fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, k, 0, M_(*keys), M_(*perm), M_(begin));
    return st ? st : fmmcl_launch(ctx, k, n_leaves * wgs, wgs, NULL, NULL);
  }
  /* a leaf too large for local memory (the depth limit's): every bit,
   * from the prefix order, whose ties are in index order as the full
   * sort's are */
  cl_mem k2[2] = {*keys, NULL}, p2[2] = {*perm, NULL};
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * sizeof(cl_ulong), NULL, &k2[1]);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * sizeof(cl_uint), NULL, &p2[1]);
  int which = 0;
  if (!st) st = fmmcl_device_radix_sort(ctx, k2, p2, n, 3 * FMMCL_MORTON_LEVELS, &which);
  if (!st && which) *keys = k2[1], *perm = p2[1], k2[1] = k2[0], p2[1] = p2[0];
  fmmcl_release(&k2[1]), fmmcl_release(&p2[1]);
  return st;
}
