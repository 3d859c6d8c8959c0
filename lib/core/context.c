/* context.c — opening a device: OpenCL context and profiling queue. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

fmmcl_status fmmcl_context_create(fmmcl_context *out, const char *selector) {
  fmmcl_clear_error(NULL);
  if (!out) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_context_create: ctx is NULL");
  *out = NULL;
  fmmcl_device_handle dev;
  fmmcl_status st = fmmcl_device_choose(NULL, selector, &dev, NULL);
  if (st) return st;
  fmmcl_context ctx = calloc(1, sizeof *ctx);
  if (!ctx) return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  ctx->dev = dev;
  ctx->last_error = calloc(1, 1);
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev.platform, 0};
  cl_int err;
  ctx->cl = clCreateContext(props, 1, &dev.device, NULL, NULL, &err);
  if (err == CL_SUCCESS)
    ctx->queue = clCreateCommandQueue(ctx->cl, dev.device, CL_QUEUE_PROFILING_ENABLE, &err);
  if (err != CL_SUCCESS || !ctx->last_error) {
    st = fmmcl_fail(NULL, err ? fmmcl_status_from_cl(err) : FMMCL_ERROR_OUT_OF_MEMORY,
                    "cannot open device %s: %s (%d)", dev.info.device_name, fmmcl_cl_error_name(err),
                    (int)err);
    fmmcl_context_destroy(ctx);
    return st;
  }
  *out = ctx;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_context_destroy(fmmcl_context ctx) {
  if (!ctx) return FMMCL_SUCCESS;
  if (ctx->queue) {
    fmmcl_pinned_pool_release(ctx);
    fmmcl_release(&ctx->sort_program);
    fmmcl_release(&ctx->m2l_table);
    clFinish(ctx->queue);
    clReleaseCommandQueue(ctx->queue);
  }
  if (ctx->cl) clReleaseContext(ctx->cl);
  free(ctx->last_error);
  free(ctx);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_context_device(fmmcl_context ctx, fmmcl_device_info *info) {
  if (!ctx || !info) return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_context_device: NULL argument");
  *info = ctx->dev.info;
  return FMMCL_SUCCESS;
}
