/* fgt_bin_device.c — the FGT's box binning on the device (cl/fgt_bin.cl plus
 * the radix sort and scan of cl/tree.cl): cells, sort by cell tuple, box
 * ranges and cells, and the sorted points left packed for cl/fgt.cl. The
 * host gets back what the (small) interaction lists and the plain-C
 * reference need: the permutation, box starts and box cells. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/fgt/fgt.h"
#include "tree/tree3d_device_sort.h"

#define WGS 64

int fmmcl_fgt_bin_device_available(fmmcl_context ctx, size_t n) {
  /* cells in double, as the host's; uint permutation and box indices */
  return ctx && ctx->dev.info.has_fp64 && n > 0 && n < (size_t)UINT32_MAX - 1;
}

void fmmcl_fgt_device_set_release(fmmcl_fgt_device_set *d) {
  cl_mem *m[] = {&d->x, &d->perm, &d->start, &d->owner};
  for (int i = 0; i < 4; i++) fmmcl_release(m[i]);
  memset(d, 0, sizeof *d);
}

typedef struct binner {
  fmmcl_context ctx;
  cl_program program;
  cl_kernel keys, flags, boxes, cells, pack_float, pack_double;
} binner;

static fmmcl_status run(fmmcl_context ctx, cl_kernel k, size_t items) {
  return fmmcl_launch(ctx, k, fmmcl_round_up(items, WGS), WGS, NULL, NULL);
}

#define M_ FMMCL_ARG_MEM
#define U_ FMMCL_ARG_UINT
#define I_ FMMCL_ARG_INT
#define D_ FMMCL_ARG_DOUBLE

/* An OpenCL call's failure as a status, without returning (buffers to free). */
static fmmcl_status cl_check(fmmcl_context ctx, cl_int err, const char *what) {
  return err == CL_SUCCESS ? FMMCL_SUCCESS
                           : fmmcl_fail(ctx, fmmcl_status_from_cl(err), "FGT binning: %s: %s", what,
                                        fmmcl_cl_error_name(err));
}

static void binner_release(binner *b) {
  cl_kernel *k[] = {&b->keys, &b->flags, &b->boxes, &b->cells, &b->pack_float, &b->pack_double};
  for (int i = 0; i < 6; i++) fmmcl_release(k[i]);
  fmmcl_release(&b->program);
}

static fmmcl_status binner_init(binner *b, fmmcl_context ctx, int dim) {
  memset(b, 0, sizeof *b);
  b->ctx = ctx;
  char opt[64];
  snprintf(opt, sizeof opt, "-DFMMCL_DOUBLE=1 -DDIM=%d", dim);
  fmmcl_status st = fmmcl_program_build(ctx, "fgt/fgt_bin.cl", opt, &b->program, NULL);
  const char *names[] = {"fgt_bin_keys",  "fgt_bin_flags",      "fgt_bin_boxes",
                         "fgt_bin_cells", "fgt_bin_pack_float", "fgt_bin_pack_double"};
  cl_kernel *ks[] = {&b->keys, &b->flags, &b->boxes, &b->cells, &b->pack_float, &b->pack_double};
  return st ? st : fmmcl_create_kernels(ctx, b->program, "fgt/fgt_bin.cl", 6, names, ks);
}

/* Sorts perm by the cell tuples: axis groups whose bit fields fit 63 bits,
 * the last group first (stable sorts: the first group's ends lexicographic). */
static fmmcl_status sort_cells(binner *bn, const fmmcl_fgt_params *par, const double *origin,
                               const double *hi, cl_mem x, cl_uint n, cl_mem d_origin, cl_mem *perm) {
  fmmcl_context ctx = bn->ctx;
  const int dim = par->dim;
  cl_int bits[FMMCL_MAX_DIM];
  for (int k = 0; k < dim; k++) {
    /* hi is the largest x / h: its cell (monotone in x / h) is the largest
     * cell; one spare keeps the bound safe */
    const double span = floor((hi[k] - origin[k]) / par->side) + 2;
    int nb = 0;
    while (nb < 62 && ldexp(1.0, nb) < span) nb++;
    bits[k] = nb;
  }
  cl_mem d_bits = NULL, keys[2] = {NULL, NULL}, perms[2] = {*perm, NULL};
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, sizeof bits, bits, &d_bits);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (size_t)n * 8, NULL, &keys[0]);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (size_t)n * 8, NULL, &keys[1]);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (size_t)n * 4, NULL, &perms[1]);
  const cl_double h = par->h, side = par->side;
  for (int end = dim, first = 1; end > 0 && !st; first = 0) {
    int lo = end, total = 0;
    while (lo > 0 && total + bits[lo - 1] <= 63) total += bits[--lo];
    st = FMMCL_KERNEL_ARGS(ctx, bn->keys, 0, M_(x), U_(n), M_(perms[0]), I_(first), I_(lo), I_(end), D_(h),
                           D_(side), M_(d_origin), M_(d_bits), M_(keys[0]));
    if (!st) st = run(ctx, bn->keys, n);
    int which = 0;
    if (!st) st = fmmcl_device_radix_sort(ctx, keys, perms, n, total, &which);
    if (!st && which) {
      cl_mem t = keys[0];
      keys[0] = keys[1];
      keys[1] = t;
      t = perms[0];
      perms[0] = perms[1];
      perms[1] = t;
    }
    end = lo;
  }
  *perm = perms[0];
  cl_mem *rel[] = {&d_bits, &keys[0], &keys[1], &perms[1]};
  for (int i = 0; i < 4; i++) fmmcl_release(rel[i]);
  return st;
}

/* Host copies of one set's permutation, box starts and cells. */
static fmmcl_status read_boxes(binner *bn, const fmmcl_fgt_params *par, const double *origin, const double *x,
                               size_t n, size_t nbox, cl_mem perm, cl_mem start, cl_mem cell,
                               fmmcl_fgt_boxes *b) {
  fmmcl_context ctx = bn->ctx;
  const int dim = par->dim;
  b->n = n;
  b->nbox = nbox;
  b->perm = malloc(n * sizeof *b->perm);
  b->x = malloc(n * dim * sizeof *b->x);
  b->start = malloc((nbox + 1) * sizeof *b->start);
  b->cell = malloc(nbox * dim * sizeof *b->cell);
  b->centre = malloc(nbox * dim * sizeof *b->centre);
  uint32_t *p32 = malloc((n + 1) * sizeof *p32);
  if (!b->perm || !b->x || !b->start || !b->cell || !b->centre || !p32) {
    free(p32);
    return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory binning %zu points", n);
  }
  cl_int err = clEnqueueReadBuffer(ctx->queue, perm, CL_TRUE, 0, n * 4, p32, 0, NULL, NULL);
  if (err == CL_SUCCESS)
    err = clEnqueueReadBuffer(ctx->queue, cell, CL_TRUE, 0, nbox * dim * 8, b->cell, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    free(p32);
    return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "FGT binning: reading the boxes: %s",
                      fmmcl_cl_error_name(err));
  }
/* the sorted scaled coordinates in double stay on the host for the
   * plain-C reference (tests run it on the plan's own boxes) */
#pragma omp parallel for schedule(static) if (n > 100000)
  for (size_t i = 0; i < n; i++) {
    b->perm[i] = p32[i];
    for (int k = 0; k < dim; k++) b->x[i * dim + k] = x[(size_t)p32[i] * dim + k] / par->h;
  }
  err = clEnqueueReadBuffer(ctx->queue, start, CL_TRUE, 0, (nbox + 1) * 4, p32, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    free(p32);
    return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "FGT binning: reading the boxes: %s",
                      fmmcl_cl_error_name(err));
  }
  for (size_t j = 0; j <= nbox; j++) b->start[j] = p32[j];
  for (size_t j = 0; j < nbox; j++)
    for (int k = 0; k < dim; k++)
      b->centre[j * dim + k] = origin[k] + ((double)b->cell[j * dim + k] + 0.5) * par->side;
  free(p32);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_fgt_bin_device(fmmcl_context ctx, const fmmcl_fgt_params *par, const double *origin,
                                  const double *hi, double unit, size_t n, const double *x, size_t real_size,
                                  fmmcl_fgt_boxes *b, fmmcl_fgt_device_set *dev) {
  memset(b, 0, sizeof *b);
  memset(dev, 0, sizeof *dev);
  if (!fmmcl_fgt_bin_device_available(ctx, n))
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "FGT device binning: %s lacks fp64 or %zu points",
                      ctx ? ctx->dev.info.device_name : "no device", n);
  const int dim = par->dim;
  const cl_uint n32 = (cl_uint)n;
  binner bn;
  fmmcl_status st = binner_init(&bn, ctx, dim);
  cl_mem d_x = NULL, d_origin = NULL, flags = NULL, scan = NULL, cell = NULL;
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * dim * sizeof(double), x, &d_x);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, dim * sizeof(double), origin, &d_origin);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &dev->perm);
  if (!st) st = sort_cells(&bn, par, origin, hi, d_x, n32, d_origin, &dev->perm);
  /* segments: a flag where the cell tuple changes, its scan numbers the boxes */
  const cl_double h = par->h, side = par->side;
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &flags);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &scan);
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, bn.flags, 0, M_(d_x), U_(n32), M_(dev->perm), D_(h), D_(side), M_(d_origin),
                           M_(flags));
  if (!st) st = run(ctx, bn.flags, n);
  if (!st)
    st = cl_check(ctx, clEnqueueCopyBuffer(ctx->queue, flags, scan, 0, 0, n * 4, 0, NULL, NULL), "copy");
  if (!st) st = fmmcl_device_scan_exclusive(ctx, scan, n);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &dev->owner);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (n + 1) * 4, NULL, &dev->start);
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, bn.boxes, 0, U_(n32), M_(flags), M_(scan), M_(dev->owner), M_(dev->start));
  if (!st) st = run(ctx, bn.boxes, n);
  cl_uint last = 0;
  if (!st)
    st = cl_check(ctx,
                  clEnqueueReadBuffer(ctx->queue, dev->owner, CL_TRUE, (n - 1) * 4, 4, &last, 0, NULL, NULL),
                  "reading the box count");
  const cl_uint nbox = last + 1;
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (size_t)nbox * dim * 8, NULL, &cell);
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, bn.cells, 0, M_(d_x), U_(nbox), M_(dev->perm), M_(dev->start), D_(h),
                           D_(side), M_(d_origin), M_(cell));
  if (!st) st = run(ctx, bn.cells, nbox);
  /* the boxes' frames from their cells (on the host, as the plain-C path
   * has them), then the points relative to them */
  if (!st) st = read_boxes(&bn, par, origin, x, n, nbox, dev->perm, dev->start, cell, b);
  if (!st) st = fmmcl_fgt_box_frames(ctx, par, unit, b);
  cl_mem d_frame = NULL;
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (size_t)nbox * dim * 8, b->frame, &d_frame);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * dim * real_size, NULL, &dev->x);
  if (!st) {
    cl_kernel k = real_size == 4 ? bn.pack_float : bn.pack_double;
    st = FMMCL_KERNEL_ARGS(ctx, k, 0, M_(d_x), U_(n32), M_(dev->perm), D_(h), M_(d_origin), M_(dev->owner),
                           M_(d_frame), M_(dev->x));
    if (!st) st = run(ctx, k, n);
  }
  cl_mem *rel[] = {&d_x, &d_origin, &flags, &scan, &cell, &d_frame};
  for (int i = 0; i < 6; i++) fmmcl_release(rel[i]);
  binner_release(&bn);
  if (st) fmmcl_fgt_device_set_release(dev);
  return st;
}
