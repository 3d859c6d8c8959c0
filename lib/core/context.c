/* context.c — opening a device: OpenCL context and profiling queues. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include <CL/cl_ext.h>

/* OpenCL 2.0's queue creation with properties (the headers are pinned to
 * 1.2, the ICD loader exports it): used only where the device takes
 * priority hints. */
extern CL_API_ENTRY cl_command_queue CL_API_CALL clCreateCommandQueueWithProperties(cl_context, cl_device_id,
                                                                                   const cl_ulong *, cl_int *);

static int has_priority_hints(cl_device_id device) {
  char version[64] = "", ext[8192] = "";
  if (clGetDeviceInfo(device, CL_DEVICE_VERSION, sizeof version - 1, version, NULL) != CL_SUCCESS) return 0;
  if (strncmp(version, "OpenCL ", 7) != 0 || version[7] < '2') return 0;
  if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL) != CL_SUCCESS) return 0;
  return strstr(ext, "cl_khr_priority_hints") != NULL;
}

/* An in-order profiling queue; of the given priority where the device
 * takes hints, else plain. */
static cl_command_queue profiling_queue(cl_context cl, cl_device_id device, int hints, cl_ulong priority,
                                        cl_int *err) {
  if (hints) {
    const cl_ulong props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, CL_QUEUE_PRIORITY_KHR, priority, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(cl, device, props, err);
    if (*err == CL_SUCCESS) return q;
  }
  return clCreateCommandQueue(cl, device, CL_QUEUE_PROFILING_ENABLE, err);
}

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
  /* The side queue's work fills what the main queue's leaves idle: where
   * the device takes priority hints, the main queue's kernels have the
   * first claim on compute units as they become ready (without them a
   * long kernel on either queue takes the device until its last group is
   * placed). */
  const int hints = err == CL_SUCCESS && has_priority_hints(dev.device);
  if (err == CL_SUCCESS) ctx->queue = profiling_queue(ctx->cl, dev.device, hints, CL_QUEUE_PRIORITY_HIGH_KHR, &err);
  if (err == CL_SUCCESS) {
    cl_int side_err;
    ctx->side_queue = profiling_queue(ctx->cl, dev.device, hints, CL_QUEUE_PRIORITY_LOW_KHR, &side_err);
    if (side_err != CL_SUCCESS) ctx->side_queue = NULL; /* optional: everything runs on the first */
  }
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
  if (ctx->side_queue) {
    clFinish(ctx->side_queue);
    clReleaseCommandQueue(ctx->side_queue);
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
