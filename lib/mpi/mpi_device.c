/* mpi_device.c — the far cells' multipole moments on the rank's device
 * (cl/mpi/moments.cl), through the context's public OpenCL handles
 * (fmmcl_cl.h): the points and the cells' pieces go up once at plan
 * creation, each execution uploads the owned charges and reads back only
 * the moments, which the host turns into equivalent charges (a few
 * thousand numbers a cell, cheap next to the sum over the cell's points). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_internal.h"

#define MAX_ORDER 40
#define PIECE 256 /* points a work-item sums */

/* The .cl file as the core library finds its own: FMMCL_KERNEL_PATH, the
 * build tree, the installed directory (the core's finder is internal, and
 * exporting it would widen libfmmcl's public interface for one caller). */
static char *read_kernel(const char *file) {
  const char *env = getenv("FMMCL_KERNEL_PATH");
  char path[4096];
  const char *dirs[2] = {FMMCL_BUILD_KERNEL_DIR, FMMCL_INSTALL_KERNEL_DIR};
  FILE *f = NULL;
  for (const char *s = env; s && *s && !f;) {
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);
    snprintf(path, sizeof path, "%.*s/%s", (int)n, s, file);
    if (n && access(path, R_OK) == 0) f = fopen(path, "rb");
    s += n + (colon ? 1 : 0);
  }
  for (int i = 0; i < 2 && !f; i++) {
    snprintf(path, sizeof path, "%s/%s", dirs[i], file);
    f = fopen(path, "rb");
  }
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
  if (text && fread(text, 1, (size_t)len, f) != (size_t)len) free(text), text = NULL;
  if (text) text[len] = '\0';
  fclose(f);
  return text;
}

static cl_mem upload(mpi_device *d, size_t bytes, const void *host, cl_int *err) {
  if (*err) return NULL;
  return clCreateBuffer(d->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes ? bytes : 8, (void *)host,
                        err);
}

/* The recurrence's coefficients, as the host's legendre() in mpi_equivalent.c. */
static void coefficients(double *coef) {
  size_t nt = (size_t)(MAX_ORDER * (MAX_ORDER + 1) / 2 + MAX_ORDER + 1);
  double *A = coef, *B = coef + nt, *C = coef + 2 * nt, *D = C + MAX_ORDER + 1;
  memset(coef, 0, (2 * nt + 2 * (MAX_ORDER + 1)) * sizeof *coef);
  for (int m = 0; m <= MAX_ORDER; m++) {
    C[m] = m ? sqrt((2.0 * m + 1) / (2.0 * m)) : 0;
    D[m] = sqrt(2.0 * m + 3);
    for (int n = m + 2; n <= MAX_ORDER; n++) {
      A[n * (n + 1) / 2 + m] = sqrt((4.0 * n * n - 1) / ((double)n * n - (double)m * m));
      B[n * (n + 1) / 2 + m] = sqrt(((n - 1.0) * (n - 1.0) - (double)m * m) / (4.0 * (n - 1.0) * (n - 1.0) - 1));
    }
  }
}

fmmcl_status mpi_device_init(mpi_device *d, fmmcl_context ctx, const mpi_device_cells *v) {
  memset(d, 0, sizeof *d);
  if (v->n_far == 0) return FMMCL_SUCCESS;
  cl_device_id dev;
  if (fmmcl_context_cl_handles(ctx, &d->context, &d->queue, &dev)) return FMMCL_ERROR_INVALID_ARGUMENT;
  cl_device_fp_config fp64 = 0;
  clGetDeviceInfo(dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL);
  if (!fp64) return FMMCL_SUCCESS; /* the host computes them */
  char *src = read_kernel("mpi/moments.cl");
  if (!src) return FMMCL_ERROR_KERNEL_NOT_FOUND;
  cl_int err;
  const char *text = src;
  d->program = clCreateProgramWithSource(d->context, 1, &text, NULL, &err);
  free(src);
  if (err) return FMMCL_ERROR_OUT_OF_MEMORY;
  if (clBuildProgram(d->program, 1, &dev, "-DMAX_ORDER=40", NULL, NULL)) return FMMCL_ERROR_BUILD_FAILED;
  d->partial = clCreateKernel(d->program, "mpi_moments_partial", &err);
  if (!err) d->sum = clCreateKernel(d->program, "mpi_moments_sum", &err);
  if (err) return FMMCL_ERROR_BUILD_FAILED;

  /* Pieces of at most PIECE points of each far cell, in cell order. */
  size_t nf = v->n_far, np = 0, out = 0;
  for (size_t f = 0; f < nf; f++) {
    const mpi_cell *c = &v->tree->cells[v->far_cells[f]];
    np += (c->end - c->begin + PIECE - 1) / PIECE;
  }
  int *pf = malloc((np + 1) * sizeof *pf), *fp = malloc((nf + 1) * sizeof *fp), *ord = malloc(nf * sizeof *ord);
  cl_long *pb = malloc((np + 1) * sizeof *pb), *pe = malloc((np + 1) * sizeof *pe),
          *po = malloc((np + 1) * sizeof *po), *fo = malloc((nf + 1) * sizeof *fo);
  cl_double4 *geom = malloc(nf * sizeof *geom);
  size_t n_terms = v->far_offset[nf], nc = 2 * (size_t)(MAX_ORDER * (MAX_ORDER + 1) / 2 + MAX_ORDER + 1) + 2 * (MAX_ORDER + 1);
  int *tf = malloc((n_terms + 1) * sizeof *tf);
  double *coef = malloc(nc * sizeof *coef);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!pf || !fp || !ord || !pb || !pe || !po || !fo || !geom || !tf || !coef) st = FMMCL_ERROR_OUT_OF_MEMORY;
  if (!st) {
    size_t k = 0;
    d->max_order = 0;
    for (size_t f = 0; f < nf; f++) {
      const mpi_cell *c = &v->tree->cells[v->far_cells[f]];
      fp[f] = (int)k, ord[f] = v->far_orders[f], fo[f] = (cl_long)v->far_offset[f];
      if (ord[f] > d->max_order) d->max_order = ord[f];
      for (int i = 0; i < 3; i++) geom[f].s[i] = c->center[i];
      geom[f].s[3] = c->radius;
      for (size_t b = c->begin; b < c->end; b += PIECE, k++) {
        pf[k] = (int)f, pb[k] = (cl_long)b, pe[k] = (cl_long)(b + PIECE < c->end ? b + PIECE : c->end);
        po[k] = (cl_long)out, out += 2 * mpi_equivalent_terms(ord[f]);
      }
      for (size_t t = v->far_offset[f]; t < v->far_offset[f + 1]; t++) tf[t] = (int)f;
    }
    fp[nf] = (int)k, fo[nf] = (cl_long)n_terms;
    coefficients(coef);
    d->n_pieces = np, d->n_terms = n_terms, d->n_owned = v->n_owned;
    err = 0;
    d->x = upload(d, 3 * v->n_owned * sizeof(double), v->coords, &err);
    d->piece_far = upload(d, np * sizeof *pf, pf, &err);
    d->piece_begin = upload(d, np * sizeof *pb, pb, &err);
    d->piece_end = upload(d, np * sizeof *pe, pe, &err);
    d->piece_out = upload(d, np * sizeof *po, po, &err);
    d->far_geom = upload(d, nf * sizeof *geom, geom, &err);
    d->far_order = upload(d, nf * sizeof *ord, ord, &err);
    d->far_piece = upload(d, (nf + 1) * sizeof *fp, fp, &err);
    d->far_offset = upload(d, (nf + 1) * sizeof *fo, fo, &err);
    d->term_far = upload(d, n_terms * sizeof *tf, tf, &err);
    d->coef = upload(d, nc * sizeof *coef, coef, &err);
    if (!err) d->q = clCreateBuffer(d->context, CL_MEM_READ_ONLY, (v->n_owned ? v->n_owned : 1) * sizeof(double), NULL, &err);
    if (!err) d->partial_buf = clCreateBuffer(d->context, CL_MEM_READ_WRITE, (out ? out : 1) * sizeof(double), NULL, &err);
    if (!err) d->re = clCreateBuffer(d->context, CL_MEM_WRITE_ONLY, 2 * (n_terms ? n_terms : 1) * sizeof(double), NULL, &err);
    if (err) st = FMMCL_ERROR_OUT_OF_MEMORY;
  }
  free(pf), free(fp), free(ord), free(pb), free(pe), free(po), free(fo), free(geom), free(tf), free(coef);
  if (!st) {
    cl_int n = (cl_int)np;
    cl_long nt = (cl_long)n_terms;
    cl_kernel a = d->partial, b = d->sum;
    err = clSetKernelArg(a, 0, sizeof(cl_mem), &d->x) | clSetKernelArg(a, 1, sizeof(cl_mem), &d->q) |
          clSetKernelArg(a, 2, sizeof(cl_mem), &d->piece_far) | clSetKernelArg(a, 3, sizeof(cl_mem), &d->piece_begin) |
          clSetKernelArg(a, 4, sizeof(cl_mem), &d->piece_end) | clSetKernelArg(a, 5, sizeof(cl_mem), &d->piece_out) |
          clSetKernelArg(a, 6, sizeof(cl_mem), &d->far_geom) | clSetKernelArg(a, 7, sizeof(cl_mem), &d->far_order) |
          clSetKernelArg(a, 8, sizeof(cl_mem), &d->coef) | clSetKernelArg(a, 9, sizeof(cl_int), &n) |
          clSetKernelArg(a, 10, sizeof(cl_mem), &d->partial_buf);
    /* re and im: the two halves of one buffer, so one read brings both. */
    err |= clSetKernelArg(b, 0, sizeof(cl_mem), &d->partial_buf) | clSetKernelArg(b, 1, sizeof(cl_mem), &d->term_far) |
           clSetKernelArg(b, 2, sizeof(cl_mem), &d->far_offset) | clSetKernelArg(b, 3, sizeof(cl_mem), &d->far_piece) |
           clSetKernelArg(b, 4, sizeof(cl_mem), &d->piece_out) | clSetKernelArg(b, 5, sizeof(cl_long), &nt) |
           clSetKernelArg(b, 6, sizeof(cl_mem), &d->re);
    if (err) st = FMMCL_ERROR_INVALID_ARGUMENT;
  }
  if (!st) d->ready = 1;
  return st;
}

int mpi_device_moments(mpi_device *d, const double *q, double *re, double *im) {
  cl_int err = clEnqueueWriteBuffer(d->queue, d->q, CL_FALSE, 0, d->n_owned * sizeof(double), q, 0, NULL, NULL);
  size_t g1[2] = {d->n_pieces, (size_t)d->max_order + 1}, g2 = d->n_terms;
  if (!err) err = clEnqueueNDRangeKernel(d->queue, d->partial, 2, NULL, g1, NULL, 0, NULL, NULL);
  if (!err) err = clEnqueueNDRangeKernel(d->queue, d->sum, 1, NULL, &g2, NULL, 0, NULL, NULL);
  if (!err) err = clEnqueueReadBuffer(d->queue, d->re, CL_TRUE, 0, d->n_terms * sizeof(double), re, 0, NULL, NULL);
  if (!err)
    err = clEnqueueReadBuffer(d->queue, d->re, CL_TRUE, d->n_terms * sizeof(double), d->n_terms * sizeof(double), im,
                              0, NULL, NULL);
  return err ? -1 : 0;
}

void mpi_device_free(mpi_device *d) {
  cl_mem *m[] = {&d->x,        &d->q,          &d->piece_far,  &d->piece_begin, &d->piece_end, &d->piece_out,
                 &d->far_geom, &d->far_order,  &d->far_piece,  &d->far_offset,  &d->term_far,  &d->coef,
                 &d->partial_buf, &d->re};
  for (size_t i = 0; i < sizeof m / sizeof *m; i++)
    if (*m[i]) clReleaseMemObject(*m[i]);
  if (d->partial) clReleaseKernel(d->partial);
  if (d->sum) clReleaseKernel(d->sum);
  if (d->program) clReleaseProgram(d->program);
  memset(d, 0, sizeof *d);
}
