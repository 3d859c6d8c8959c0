/* plan_update.c — new positions for an existing plan (fmmcl_plan_update_positions):
 * the method's state rebuilt beside the old one, which is dropped only once
 * the new one stands, so a failure leaves the plan as it was. */
#include <string.h>

#include "plan/registry.h"

fmmcl_status fmmcl_plan_update_positions(fmmcl_plan plan, const double *sources, const double *targets) {
  if (!plan) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_update_positions: plan is NULL");
  fmmcl_context ctx = plan->ctx;
  fmmcl_clear_error(ctx);
  if (!sources)
    return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_update_positions: sources is NULL");
  if ((targets == NULL) != plan->targets_are_sources)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "fmmcl_plan_update_positions: the plan's targets %s the sources; pass %s",
                      plan->targets_are_sources ? "are" : "are not",
                      plan->targets_are_sources ? "NULL targets" : "its targets");
  if (!plan->ops->create || plan->borrowed)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "fmmcl_plan_update_positions: a %s plan is rebuilt with the call that created it",
                      plan->ops->name);
  const double t0 = fmmcl_wall_seconds();
  /* the method's own update where it can keep its state (the same tree),
   * checking the points as below while it reads them; it leaves the plan
   * untouched when it cannot, and the checks and the rebuild below then
   * answer, errors included */
  int done = 0;
  if (plan->ops->update) {
    /* the build's time stays; the hook records its own steps after it */
    size_t keep = 0;
    for (size_t i = 0; i < plan->n_phases; i++)
      if (strcmp(plan->phases[i].name, "build") == 0) plan->phases[keep++] = plan->phases[i];
    plan->n_phases = keep;
    if (plan->ops->update(plan, sources, targets, &done)) fmmcl_clear_error(ctx), done = 0;
  }
  if (done) {
    fmmcl_plan_record(plan, "update", fmmcl_wall_seconds() - t0);
    return FMMCL_SUCCESS;
  }
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
  size_t keep = 0;
  for (size_t i = 0; i < plan->n_phases; i++)
    if (strcmp(plan->phases[i].name, "build") == 0) plan->phases[keep++] = plan->phases[i];
  plan->n_phases = keep;
  for (size_t i = 0; i < fresh.n_phases; i++)
    fmmcl_plan_record(plan, fresh.phases[i].name, fresh.phases[i].seconds);
  fmmcl_plan_record(plan, "update", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}
