/* status.c — status strings, OpenCL error mapping, and the last-error
 * message kept per context (or per thread for calls without a context). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "core/internal.h"

/* Messages of calls without a context live per thread; a thread-specific key
 * with free() as destructor releases them when the thread ends. */
static _Thread_local char *thread_last_error;
static tss_t thread_error_key;
static once_flag thread_error_once = ONCE_FLAG_INIT;
static int thread_error_key_ok;

static void make_thread_error_key(void) {
  thread_error_key_ok = tss_create(&thread_error_key, free) == thrd_success;
}

/* called after the context-free slot changes, so the destructor frees the latest block */
static void track_thread_error(fmmcl_context ctx) {
  if (ctx) return;
  call_once(&thread_error_once, make_thread_error_key);
  if (thread_error_key_ok) tss_set(thread_error_key, thread_last_error);
}

const char *fmmcl_strerror(fmmcl_status status) {
  switch (status) {
    case FMMCL_SUCCESS: return "success";
    case FMMCL_ERROR_NULL_POINTER: return "a required pointer argument is NULL";
    case FMMCL_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case FMMCL_ERROR_EMPTY_INPUT: return "empty input (N = 0)";
    case FMMCL_ERROR_NONFINITE_INPUT: return "NaN or infinite coordinate or charge";
    case FMMCL_ERROR_UNSUPPORTED: return "not supported";
    case FMMCL_ERROR_OUT_OF_MEMORY: return "out of memory";
    case FMMCL_ERROR_NO_DEVICE: return "no OpenCL device found";
    case FMMCL_ERROR_DEVICE_NOT_FOUND: return "no device matches the selector";
    case FMMCL_ERROR_KERNEL_NOT_FOUND: return "kernel source file not found";
    case FMMCL_ERROR_BUILD_FAILED: return "OpenCL kernel build failed";
    case FMMCL_ERROR_OPENCL: return "OpenCL runtime error";
    case FMMCL_ERROR_IO: return "input/output error";
    case FMMCL_ERROR_CORRUPT_FILE: return "corrupt file";
    case FMMCL_ERROR_INTERNAL: return "internal error";
    case FMMCL_ERROR_NONFINITE_OUTPUT: return "the result is NaN or infinite (overflow)";
    default: return "unknown status";
  }
}

static char **error_slot(fmmcl_context ctx) { return ctx ? &ctx->last_error : &thread_last_error; }

const char *fmmcl_last_error(fmmcl_context ctx) {
  char *msg = *error_slot(ctx);
  return msg ? msg : "";
}

void fmmcl_clear_error(fmmcl_context ctx) {
  char **slot = error_slot(ctx);
  if (*slot) (*slot)[0] = '\0';
}

fmmcl_status fmmcl_fail(fmmcl_context ctx, fmmcl_status status, const char *fmt, ...) {
  char **slot = error_slot(ctx);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return status;
  char *msg = malloc((size_t)n + 1);
  if (!msg) return status; /* keep the old message rather than lose the status */
  va_start(ap, fmt);
  vsnprintf(msg, (size_t)n + 1, fmt, ap);
  va_end(ap);
  free(*slot);
  *slot = msg;
  track_thread_error(ctx);
  return status;
}

void fmmcl_fail_append(fmmcl_context ctx, const char *text) {
  char **slot = error_slot(ctx);
  size_t old = *slot ? strlen(*slot) : 0, add = strlen(text);
  char *msg = realloc(*slot, old + add + 1);
  if (!msg) return;
  memcpy(msg + old, text, add + 1);
  *slot = msg;
  track_thread_error(ctx);
}

fmmcl_status fmmcl_status_from_cl(cl_int err) {
  switch (err) {
    case CL_SUCCESS: return FMMCL_SUCCESS;
    case CL_OUT_OF_HOST_MEMORY:
    case CL_OUT_OF_RESOURCES:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return FMMCL_ERROR_OUT_OF_MEMORY;
    case CL_DEVICE_NOT_FOUND: return FMMCL_ERROR_NO_DEVICE;
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE:
    case CL_LINK_PROGRAM_FAILURE: return FMMCL_ERROR_BUILD_FAILED;
    default: return FMMCL_ERROR_OPENCL;
  }
}

const char *fmmcl_cl_error_name(cl_int err) {
#define NAME(e) \
  case e: return #e
  switch (err) {
    NAME(CL_SUCCESS);
    NAME(CL_DEVICE_NOT_FOUND);
    NAME(CL_DEVICE_NOT_AVAILABLE);
    NAME(CL_COMPILER_NOT_AVAILABLE);
    NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE);
    NAME(CL_OUT_OF_RESOURCES);
    NAME(CL_OUT_OF_HOST_MEMORY);
    NAME(CL_PROFILING_INFO_NOT_AVAILABLE);
    NAME(CL_MEM_COPY_OVERLAP);
    NAME(CL_IMAGE_FORMAT_MISMATCH);
    NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED);
    NAME(CL_BUILD_PROGRAM_FAILURE);
    NAME(CL_MAP_FAILURE);
    NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET);
    NAME(CL_COMPILE_PROGRAM_FAILURE);
    NAME(CL_LINKER_NOT_AVAILABLE);
    NAME(CL_LINK_PROGRAM_FAILURE);
    NAME(CL_INVALID_VALUE);
    NAME(CL_INVALID_DEVICE_TYPE);
    NAME(CL_INVALID_PLATFORM);
    NAME(CL_INVALID_DEVICE);
    NAME(CL_INVALID_CONTEXT);
    NAME(CL_INVALID_QUEUE_PROPERTIES);
    NAME(CL_INVALID_COMMAND_QUEUE);
    NAME(CL_INVALID_HOST_PTR);
    NAME(CL_INVALID_MEM_OBJECT);
    NAME(CL_INVALID_BINARY);
    NAME(CL_INVALID_BUILD_OPTIONS);
    NAME(CL_INVALID_PROGRAM);
    NAME(CL_INVALID_PROGRAM_EXECUTABLE);
    NAME(CL_INVALID_KERNEL_NAME);
    NAME(CL_INVALID_KERNEL_DEFINITION);
    NAME(CL_INVALID_KERNEL);
    NAME(CL_INVALID_ARG_INDEX);
    NAME(CL_INVALID_ARG_VALUE);
    NAME(CL_INVALID_ARG_SIZE);
    NAME(CL_INVALID_KERNEL_ARGS);
    NAME(CL_INVALID_WORK_DIMENSION);
    NAME(CL_INVALID_WORK_GROUP_SIZE);
    NAME(CL_INVALID_WORK_ITEM_SIZE);
    NAME(CL_INVALID_GLOBAL_OFFSET);
    NAME(CL_INVALID_EVENT_WAIT_LIST);
    NAME(CL_INVALID_EVENT);
    NAME(CL_INVALID_OPERATION);
    NAME(CL_INVALID_BUFFER_SIZE);
    NAME(CL_INVALID_GLOBAL_WORK_SIZE);
    NAME(CL_INVALID_PROPERTY);
    default: return "unknown OpenCL error";
  }
#undef NAME
}
