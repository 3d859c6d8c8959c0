/* launch.c — kernel creation, argument setting, launches and their event
 * log, and NULL-tolerant release of OpenCL objects (declared in launch.h). */
#include <stdlib.h>

#include "core/internal.h"

/* The kernel's function name for an error message ("?" if it cannot be had). */
static const char *kernel_name(cl_kernel k, char *buf, size_t len) {
  if (!k || clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, len, buf, NULL) != CL_SUCCESS) return "?";
  buf[len - 1] = '\0';
  return buf;
}

fmmcl_status fmmcl_create_kernel(fmmcl_context ctx, cl_program program, const char *file, const char *name,
                                 cl_kernel *k) {
  cl_int err = CL_SUCCESS;
  *k = clCreateKernel(program, name, &err);
  if (err == CL_SUCCESS) return FMMCL_SUCCESS;
  *k = NULL;
  return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "clCreateKernel(%s) in %s: %s (%d)", name, file,
                    fmmcl_cl_error_name(err), (int)err);
}

fmmcl_status fmmcl_create_kernels(fmmcl_context ctx, cl_program program, const char *file, size_t n,
                                  const char *const *names, cl_kernel *const *kernels) {
  for (size_t i = 0; i < n; i++) {
    fmmcl_status st = fmmcl_create_kernel(ctx, program, file, names[i], kernels[i]);
    if (st) return st;
  }
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_kernel_args(fmmcl_context ctx, cl_kernel k, cl_uint first, size_t n,
                               const fmmcl_arg *args) {
  for (size_t i = 0; i < n; i++) {
    cl_int err = clSetKernelArg(k, first + (cl_uint)i, args[i].size, &args[i].value);
    if (err != CL_SUCCESS) {
      char name[128];
      return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "clSetKernelArg(%s, argument %u, %zu bytes): %s (%d)",
                        kernel_name(k, name, sizeof name), (unsigned)(first + i), args[i].size,
                        fmmcl_cl_error_name(err), (int)err);
    }
  }
  return FMMCL_SUCCESS;
}

/* ---- the event log ---------------------------------------------------------- */

cl_event *fmmcl_event_log_slot(fmmcl_event_log *log, const char *phase) {
  if (log->n == log->capacity) {
    size_t cap = log->capacity ? 2 * log->capacity : 64;
    const char **ph = realloc(log->phase, cap * sizeof *ph);
    if (ph) log->phase = ph;
    cl_event *ev = ph ? realloc(log->ev, cap * sizeof *ev) : NULL;
    if (!ev) {
      log->out_of_memory = 1;
      return NULL;
    }
    log->ev = ev;
    log->capacity = cap;
  }
  log->phase[log->n] = phase;
  log->ev[log->n] = NULL;
  return &log->ev[log->n++];
}

/* Waits, hands each entry's time to the plan (or sums it into *total),
 * releases events and memory. */
static fmmcl_status drain(fmmcl_context ctx, fmmcl_event_log *log, fmmcl_plan plan, double *total) {
  cl_int err = log->n ? clFinish(ctx->queue) : CL_SUCCESS;
  for (size_t i = 0; i < log->n; i++) {
    double sec = log->ev[i] && err == CL_SUCCESS ? fmmcl_event_seconds(log->ev[i]) : 0.0;
    if (plan) fmmcl_plan_record(plan, log->phase[i], sec);
    if (total) *total += sec;
    fmmcl_release(&log->ev[i]);
  }
  const int oom = log->out_of_memory;
  free(log->phase);
  free(log->ev);
  *log = (fmmcl_event_log){0};
  if (err != CL_SUCCESS)
    return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "clFinish after the logged launches: %s (%d)",
                      fmmcl_cl_error_name(err), (int)err);
  if (oom) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for the event log");
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_event_log_flush(fmmcl_plan plan, fmmcl_event_log *log) {
  return drain(plan->ctx, log, plan, NULL);
}

fmmcl_status fmmcl_event_log_total(fmmcl_context ctx, fmmcl_event_log *log, double *seconds) {
  *seconds = 0;
  return drain(ctx, log, NULL, seconds);
}

/* ---- launching ------------------------------------------------------------------ */

fmmcl_status fmmcl_launch_nd(fmmcl_context ctx, cl_kernel k, cl_uint dims, const size_t *global,
                             const size_t *local, fmmcl_event_log *log, const char *phase) {
  for (cl_uint d = 0; d < dims; d++)
    if (global[d] == 0) return FMMCL_SUCCESS;
  cl_event *ev = NULL;
  if (log && !(ev = fmmcl_event_log_slot(log, phase)))
    return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for the event log");
  cl_int err = clEnqueueNDRangeKernel(ctx->queue, k, dims, NULL, global, local, 0, NULL, ev);
  if (err == CL_SUCCESS) return FMMCL_SUCCESS;
  char name[128];
  return fmmcl_fail(ctx, fmmcl_status_from_cl(err),
                    "clEnqueueNDRangeKernel(%s, global %zu, local %zu): %s (%d)",
                    kernel_name(k, name, sizeof name), global[0], local ? local[0] : (size_t)0,
                    fmmcl_cl_error_name(err), (int)err);
}

fmmcl_status fmmcl_launch(fmmcl_context ctx, cl_kernel k, size_t global, size_t local, fmmcl_event_log *log,
                          const char *phase) {
  return fmmcl_launch_nd(ctx, k, 1, &global, local ? &local : NULL, log, phase);
}

/* ---- releasing ---------------------------------------------------------------------- */

void fmmcl_release_mem(cl_mem *m) {
  if (*m) clReleaseMemObject(*m);
  *m = NULL;
}

void fmmcl_release_kernel(cl_kernel *k) {
  if (*k) clReleaseKernel(*k);
  *k = NULL;
}

void fmmcl_release_program(cl_program *p) {
  if (*p) clReleaseProgram(*p);
  *p = NULL;
}

void fmmcl_release_event(cl_event *e) {
  if (*e) clReleaseEvent(*e);
  *e = NULL;
}
