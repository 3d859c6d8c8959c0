/* plan_update.c — new positions for an existing plan (fmmcl_plan_update_positions
 * from host arrays, fmmcl_plan_update_positions_buffers from device buffers):
 * the method's own update where it keeps its state, else the method's state
 * rebuilt beside the old one, which is dropped only once the new one
 * stands, so a failure leaves the plan as it was. */
#include <string.h>

#include "fmmcl_cl.h"
#include "plan/registry.h"

/* The checks both calls share: the plan, the sources, the targets' presence
 * as the plan has them, and a method that can be updated. */
static fmmcl_status arguments_check(fmmcl_plan plan, const char *fn, int have_sources, int have_targets) {
  if (!plan) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "%s: plan is NULL", fn);
  fmmcl_context ctx = plan->ctx;
  fmmcl_clear_error(ctx);
  if (!have_sources) return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "%s: sources is NULL", fn);
  if (have_targets == plan->targets_are_sources)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s: the plan's targets %s the sources; pass %s", fn,
                      plan->targets_are_sources ? "are" : "are not",
                      plan->targets_are_sources ? "NULL targets" : "its targets");
  if (!plan->ops->create || plan->borrowed)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "%s: a %s plan is rebuilt with the call that created it",
                      fn, plan->ops->name);
  return FMMCL_SUCCESS;
}

/* The build's time stays; an update records its own steps after it. */
static void keep_build_phase(fmmcl_plan plan) {
  size_t keep = 0;
  for (size_t i = 0; i < plan->n_phases; i++)
    if (strcmp(plan->phases[i].name, "build") == 0) plan->phases[keep++] = plan->phases[i];
  plan->n_phases = keep;
}

/* The points checked and the plan rebuilt for them; t0 when the update began. */
static fmmcl_status rebuild(fmmcl_plan plan, const double *sources, const double *targets, double t0) {
  fmmcl_context ctx = plan->ctx;
  const int dim = plan->opt.dim;
  fmmcl_status st = fmmcl_points_check(ctx, "sources", plan->n_sources, sources, dim);
  if (!st && targets) st = fmmcl_points_check(ctx, "targets", plan->n_targets, targets, dim);
  if (!st) st = fmmcl_ranges_check(ctx, &plan->opt, plan->n_sources, sources, plan->n_targets, targets);
  if (st) return st;
  /* the new state is made on a copy of the plan, so the old one stays
   * whole until the new one is complete */
  struct fmmcl_plan_s fresh = *plan;
  fresh.impl = NULL;
  fresh.n_phases = 0;
  st = plan->ops->create(&fresh, sources, targets ? targets : sources);
  if (st) {
    plan->ops->destroy(&fresh);
    return st;
  }
  plan->ops->destroy(plan);
  plan->impl = fresh.impl;
  memcpy(plan->build_options, fresh.build_options, sizeof plan->build_options);
  /* the phases the create recorded (sort, tree, ...) follow the build
   * time, as after fmmcl_plan_create */
  keep_build_phase(plan);
  for (size_t i = 0; i < fresh.n_phases; i++)
    fmmcl_plan_record(plan, fresh.phases[i].name, fresh.phases[i].seconds);
  fmmcl_plan_record(plan, "update", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_plan_update_positions(fmmcl_plan plan, const double *sources, const double *targets) {
  fmmcl_status st = arguments_check(plan, "fmmcl_plan_update_positions", sources != NULL, targets != NULL);
  if (st) return st;
  const double t0 = fmmcl_wall_seconds();
  /* the method's own update where it can keep its state (the same tree),
   * checking the points as rebuild does while it reads them; it leaves
   * the plan untouched when it cannot, and the checks and the rebuild
   * then answer, errors included */
  int done = 0;
  if (plan->ops->update) {
    keep_build_phase(plan);
    if (plan->ops->update(plan, sources, targets, &done)) fmmcl_clear_error(plan->ctx), done = 0;
  }
  if (done) {
    fmmcl_plan_record(plan, "update", fmmcl_wall_seconds() - t0);
    return FMMCL_SUCCESS;
  }
  return rebuild(plan, sources, targets, t0);
}

/* n doubles of a device buffer, read into a pinned stage (pageable memory
 * crawls through the driver's bounce buffer, pinned_host.c). */
static fmmcl_status read_points(fmmcl_context ctx, cl_mem buf, size_t n, fmmcl_pinned *stage) {
  fmmcl_status st = fmmcl_pinned_alloc(ctx, (n ? n : 1) * sizeof(double), 0, stage);
  if (st) return st;
  cl_int err =
      n ? clEnqueueReadBuffer(ctx->queue, buf, CL_TRUE, 0, n * sizeof(double), stage->ptr, 0, NULL, NULL)
        : CL_SUCCESS;
  if (err != CL_SUCCESS)
    return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "reading the positions buffer: %s",
                      fmmcl_cl_error_name(err));
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_plan_update_positions_buffers(fmmcl_plan plan, cl_mem sources, cl_mem targets) {
  const char *fn = "fmmcl_plan_update_positions_buffers";
  fmmcl_status st = arguments_check(plan, fn, sources != NULL, targets != NULL);
  if (st) return st;
  const size_t dim = (size_t)plan->opt.dim;
  st = fmmcl_device_buffer_check(plan, fn, sources, "the sources buffer", dim * plan->n_sources, 8);
  if (!st && targets)
    st = fmmcl_device_buffer_check(plan, fn, targets, "the targets buffer", dim * plan->n_targets, 8);
  if (st) return st;
  const double t0 = fmmcl_wall_seconds();
  int done = 0;
  if (plan->ops->update_buffers) {
    keep_build_phase(plan);
    if (plan->ops->update_buffers(plan, sources, targets, &done)) fmmcl_clear_error(plan->ctx), done = 0;
  }
  if (done) {
    fmmcl_plan_record(plan, "update", fmmcl_wall_seconds() - t0);
    return FMMCL_SUCCESS;
  }
  /* through the host: the in-place update, where the method has one and
   * has not just declined, and else the checks and the rebuild */
  fmmcl_pinned s = {0}, t = {0};
  st = read_points(plan->ctx, sources, dim * plan->n_sources, &s);
  if (!st && targets) st = read_points(plan->ctx, targets, dim * plan->n_targets, &t);
  const double *y = targets ? t.ptr : NULL;
  if (!st && plan->ops->update_buffers) st = rebuild(plan, s.ptr, y, t0);
  else if (!st) st = fmmcl_plan_update_positions(plan, s.ptr, y);
  if (s.ptr) fmmcl_pinned_free(&s);
  if (t.ptr) fmmcl_pinned_free(&t);
  return st;
}
