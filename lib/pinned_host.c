/* pinned_host.c — host staging buffers the device can reach by DMA: a
 * CL_MEM_ALLOC_HOST_PTR buffer mapped once for the plan's lifetime. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Transfers from ordinary (pageable) memory go through the driver's own
 * bounce buffer; on the H100 that made reading 16 MB of FMM results cost
 * ~40 ms. Memory the driver allocated and pinned itself moves at PCIe speed.
 * Where the driver cannot give it (or a CPU device, where it changes
 * nothing), plain malloc memory does the same job more slowly. */
fmmcl_status fmmcl_pinned_alloc(fmmcl_context ctx, size_t bytes, fmmcl_pinned *p) {
  memset(p, 0, sizeof *p);
  if (bytes == 0) bytes = 16;
  p->bytes = bytes;
  cl_int err;
  p->buf = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
  if (err == CL_SUCCESS) {
    p->ptr = clEnqueueMapBuffer(ctx->queue, p->buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                                NULL, NULL, &err);
    if (err == CL_SUCCESS) {
      p->queue = ctx->queue;
      clRetainCommandQueue(p->queue);
      memset(p->ptr, 0, bytes);
      return FMMCL_SUCCESS;
    }
    clReleaseMemObject(p->buf);
    p->buf = NULL;
  }
  p->ptr = calloc(1, bytes);
  if (!p->ptr) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory (%zu bytes)", bytes);
  return FMMCL_SUCCESS;
}

void fmmcl_pinned_free(fmmcl_pinned *p) {
  if (p->buf) {
    clEnqueueUnmapMemObject(p->queue, p->buf, p->ptr, 0, NULL, NULL);
    clFinish(p->queue);
    clReleaseMemObject(p->buf);
    clReleaseCommandQueue(p->queue);
  } else {
    free(p->ptr);
  }
  memset(p, 0, sizeof *p);
}
