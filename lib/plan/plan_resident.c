/* plan_resident.c — plans executed on the caller's device buffers
 * (fmmcl_cl.h): argument checks, charges and results checked on the
 * device, and the path through the host for methods that read host arrays. */
#include <math.h>
#include <stdlib.h>

#include "fmmcl_cl.h"
#include "plan/registry.h"

fmmcl_status fmmcl_context_cl_handles(fmmcl_context ctx, cl_context *context, cl_command_queue *queue,
                                      cl_device_id *device) {
  if (!ctx) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_context_cl_handles: ctx is NULL");
  if (context) *context = ctx->cl;
  if (queue) *queue = ctx->queue;
  if (device) *device = ctx->dev.device;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_device_buffer_check(fmmcl_plan plan, const char *fn, cl_mem buf, const char *what,
                                       size_t count, size_t real_size) {
  cl_context owner = NULL;
  size_t bytes = 0;
  cl_int err = clGetMemObjectInfo(buf, CL_MEM_CONTEXT, sizeof owner, &owner, NULL);
  if (!err) err = clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
  if (err)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s: %s is no buffer (%s)", fn, what,
                      fmmcl_cl_error_name(err));
  if (owner != plan->ctx->cl)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "%s: %s belongs to another OpenCL context than the plan's "
                      "(fmmcl_context_cl_handles gives the plan's)",
                      fn, what);
  if (bytes < count * real_size)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "%s: %s holds %zu bytes, fewer than the %zu %s values (%zu bytes) it must hold", fn,
                      what, bytes, count, real_size == 8 ? "double" : "float", count * real_size);
  return FMMCL_SUCCESS;
}

static fmmcl_status buffer_check(fmmcl_plan plan, cl_mem buf, const char *what, size_t count,
                                 size_t real_size) {
  return fmmcl_device_buffer_check(plan, "fmmcl_plan_execute_buffers", buf, what, count, real_size);
}

/* The outputs' check of fmmcl_plan_execute, on the device: both buffers
 * in one round trip. */
static fmmcl_status outputs_check(fmmcl_plan plan, const fmmcl_device_io *io) {
  const size_t dim = (size_t)plan->opt.dim;
  const cl_mem v[2] = {io->potential, io->gradient};
  const size_t n[2] = {plan->n_targets, plan->n_targets * dim};
  int bad;
  fmmcl_status st = fmmcl_resident_nonfinite(plan, v, n, io->gradient ? 2 : 1, &bad);
  if (st) return st;
  for (int k = 0; k < 2; k++) {
    if (bad & (1 << k))
      return fmmcl_fail(plan->ctx, FMMCL_ERROR_NONFINITE_OUTPUT,
                        "a %s value is NaN or infinite: the %s sum overflowed %s precision; %s",
                        k ? "gradient" : "potential", plan->ops->name,
                        plan->opt.precision == FMMCL_SINGLE ? "single" : "double",
                        plan->opt.precision == FMMCL_SINGLE
                            ? "use FMMCL_DOUBLE, or rescale coordinates and charges"
                            : "rescale coordinates and charges");
  }
  return FMMCL_SUCCESS;
}

/* Methods that read host arrays: the charges come to the host, the plan
 * runs as fmmcl_plan_execute (every check included), the results go back. */
static fmmcl_status through_host(fmmcl_plan plan, const fmmcl_device_io *io, size_t rs) {
  fmmcl_context ctx = plan->ctx;
  const size_t ns = plan->n_sources, nt = plan->n_targets, ng = nt * (size_t)plan->opt.dim;
  double *q = malloc((ns + nt + ng) * sizeof(double));
  void *stage = malloc((ns > nt + ng ? ns : nt + ng) * rs + 1);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!q || !stage) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  cl_int err = CL_SUCCESS;
  if (!st) err = clEnqueueReadBuffer(ctx->queue, io->charges, CL_TRUE, 0, ns * rs, stage, 0, NULL, NULL);
  if (!st && err)
    st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "reading the charges buffer: %s",
                    fmmcl_cl_error_name(err));
  if (!st) {
    for (size_t i = 0; i < ns; i++) q[i] = fmmcl_get_real(stage, rs, i);
    double *pot = q + ns, *grad = io->gradient ? pot + nt : NULL;
    st = fmmcl_plan_execute(plan, q, pot, grad);
    for (size_t i = 0; !st && i < nt + (grad ? ng : 0); i++) fmmcl_put_real(stage, rs, i, pot[i]);
    /* a result finite in double (a method may sum in scaled units) can
     * still exceed the buffer's float */
    for (size_t i = 0; !st && rs == 4 && i < nt + (grad ? ng : 0); i++)
      if (!isfinite(fmmcl_get_real(stage, rs, i)))
        st = fmmcl_fail(ctx, FMMCL_ERROR_NONFINITE_OUTPUT,
                        "the %s at target %zu is %g, beyond single precision's range: the result buffers "
                        "cannot hold it; use FMMCL_DOUBLE, or rescale coordinates and charges",
                        i < nt ? "potential" : "gradient", i < nt ? i : (i - nt) / (size_t)plan->opt.dim,
                        pot[i]);
    if (!st)
      err = clEnqueueWriteBuffer(ctx->queue, io->potential, CL_FALSE, 0, nt * rs, stage, 0, NULL, NULL);
    if (!st && !err && grad)
      err = clEnqueueWriteBuffer(ctx->queue, io->gradient, CL_FALSE, 0, ng * rs, (char *)stage + nt * rs, 0,
                                 NULL, NULL);
    if (!st && !err) err = clFinish(ctx->queue);
    if (!st && err)
      st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "writing the result buffers: %s",
                      fmmcl_cl_error_name(err));
  }
  free(q);
  free(stage);
  return st;
}

fmmcl_status fmmcl_plan_execute_buffers(fmmcl_plan plan, cl_mem charges, cl_mem potential, cl_mem gradient) {
  if (!plan) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_execute_buffers: plan is NULL");
  fmmcl_context ctx = plan->ctx;
  fmmcl_clear_error(ctx);
  if (!charges || !potential)
    return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_execute_buffers: %s is NULL",
                      charges ? "potential" : "charges");
  if (gradient && !plan->opt.gradient)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "a gradient buffer was passed but the plan was created without gradient");
  const size_t rs = plan->opt.precision == FMMCL_DOUBLE ? 8 : 4;
  fmmcl_status st = buffer_check(plan, charges, "the charges buffer", plan->n_sources, rs);
  if (!st) st = buffer_check(plan, potential, "the potential buffer", plan->n_targets, rs);
  if (!st && gradient)
    st = buffer_check(plan, gradient, "the gradient buffer", plan->n_targets * (size_t)plan->opt.dim, rs);
  if (st) return st;
  const fmmcl_device_io io = {.charges = charges, .potential = potential, .gradient = gradient};
  if (!plan->ops->resident) return through_host(plan, &io, rs);
  double total;
  int nonfinite;
  st = fmmcl_resident_abs_sum(plan, charges, plan->n_sources, &total, &nonfinite);
  if (!st && nonfinite) st = fmmcl_fail(ctx, FMMCL_ERROR_NONFINITE_INPUT, "a charge is NaN or infinite");
  if (!st) st = fmmcl_charges_total_check(plan, total);
  if (st) return st;
  fmmcl_plan_restart_phases(plan);
  plan->io = &io;
  st = plan->ops->execute(plan, NULL, NULL, NULL);
  plan->io = NULL;
  return st ? st : outputs_check(plan, &io);
}
