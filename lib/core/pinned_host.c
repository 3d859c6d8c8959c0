/* pinned_host.c — host staging buffers the device can reach by DMA: a
 * CL_MEM_ALLOC_HOST_PTR buffer mapped once, pooled per context. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Transfers from ordinary (pageable) memory go through the driver's own
 * bounce buffer, several times slower than the bus. Memory the driver
 * allocated and pinned itself moves at PCIe speed, but pinning is slow
 * too (about as slow as one pageable transfer), so freed blocks stay in the
 * context for the next plan: a simulation that rebuilds its plan every
 * step pins once. Where the driver cannot pin, malloc memory does the same
 * job more slowly. */

/* A pooled block big enough for bytes and not more than twice as big. */
static int take_pooled(fmmcl_context ctx, size_t bytes, fmmcl_pinned *p) {
  size_t best = ctx->n_pinned_pool;
  for (size_t i = 0; i < ctx->n_pinned_pool; i++) {
    size_t b = ctx->pinned_pool[i].bytes;
    if (b >= bytes && b <= 2 * bytes + (1u << 20) &&
        (best == ctx->n_pinned_pool || b < ctx->pinned_pool[best].bytes))
      best = i;
  }
  if (best == ctx->n_pinned_pool) return 0;
  p->buf = ctx->pinned_pool[best].buf;
  p->ptr = ctx->pinned_pool[best].ptr;
  p->bytes = ctx->pinned_pool[best].bytes;
  /* the pool stays oldest first (see fmmcl_pinned_free) */
  memmove(&ctx->pinned_pool[best], &ctx->pinned_pool[best + 1],
          (ctx->n_pinned_pool - best - 1) * sizeof ctx->pinned_pool[0]);
  ctx->n_pinned_pool--;
  return 1;
}

static void unpin(fmmcl_context ctx, cl_mem buf, void *ptr) {
  clEnqueueUnmapMemObject(ctx->queue, buf, ptr, 0, NULL, NULL);
  clFinish(ctx->queue);
  clReleaseMemObject(buf);
}

fmmcl_status fmmcl_pinned_alloc(fmmcl_context ctx, size_t bytes, int zero, fmmcl_pinned *p) {
  memset(p, 0, sizeof *p);
  p->ctx = ctx;
  if (bytes == 0) bytes = 16;
  if (take_pooled(ctx, bytes, p)) {
    if (zero) memset(p->ptr, 0, bytes);
    return FMMCL_SUCCESS;
  }
  p->bytes = bytes;
  cl_int err;
  p->buf = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
  if (err == CL_SUCCESS) {
    p->ptr = clEnqueueMapBuffer(ctx->queue, p->buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL,
                                NULL, &err);
    if (err == CL_SUCCESS) {
      if (zero) memset(p->ptr, 0, bytes);
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
  fmmcl_context ctx = p->ctx;
  /* a full pool gives up its oldest block: the one just freed is the likelier
   * to be asked for again (the next plan of the same size), and a sweep over
   * sizes would otherwise leave the pool full of blocks nobody wants */
  if (p->buf && ctx->n_pinned_pool == FMMCL_PINNED_POOL) {
    unpin(ctx, ctx->pinned_pool[0].buf, ctx->pinned_pool[0].ptr);
    memmove(&ctx->pinned_pool[0], &ctx->pinned_pool[1], (FMMCL_PINNED_POOL - 1) * sizeof ctx->pinned_pool[0]);
    ctx->n_pinned_pool--;
  }
  if (p->buf) {
    ctx->pinned_pool[ctx->n_pinned_pool].buf = p->buf;
    ctx->pinned_pool[ctx->n_pinned_pool].ptr = p->ptr;
    ctx->pinned_pool[ctx->n_pinned_pool].bytes = p->bytes;
    ctx->n_pinned_pool++;
  } else {
    free(p->ptr);
  }
  memset(p, 0, sizeof *p);
}

void fmmcl_pinned_pool_release(fmmcl_context ctx) {
  for (size_t i = 0; i < ctx->n_pinned_pool; i++)
    unpin(ctx, ctx->pinned_pool[i].buf, ctx->pinned_pool[i].ptr);
  ctx->n_pinned_pool = 0;
}
