/* plan.c — plan options, argument validation shared by every method, and
 * dispatch of create/execute/destroy and the queries to the chosen method. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "model/model.h"
#include "plan/registry.h"

fmmcl_status fmmcl_plan_options_init(fmmcl_plan_options *opt, fmmcl_kernel kernel) {
  if (!opt) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_options_init: opt is NULL");
  memset(opt, 0, sizeof *opt);
  const fmmcl_kernel_desc *k = fmmcl_kernel_describe(kernel);
  opt->kernel = kernel;
  opt->method = FMMCL_DIRECT;
  opt->precision = FMMCL_SINGLE;
  opt->dim = k ? k->default_dim : 3; /* an unknown kernel fails in fmmcl_options_check */
  opt->gradient = 1;
  opt->softening = 0.0;
  opt->sigma = 1.0;
  opt->theta = 0.5;
  return FMMCL_SUCCESS;
}

/* Checks the options alone (not the points); shared with the reference. */
fmmcl_status fmmcl_options_check(fmmcl_context ctx, const fmmcl_plan_options *o) {
  const fmmcl_kernel_desc *k = fmmcl_kernel_describe(o->kernel);
  if (!k) return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "unknown kernel %d", (int)o->kernel);
  if (k->dim_min == k->dim_max && o->dim != k->dim_min)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s needs dim = %d, got %d", k->title, k->dim_min, o->dim);
  if (o->dim < k->dim_min || o->dim > k->dim_max)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s needs dim in %d..%d, got %d", k->title, k->dim_min,
                      k->dim_max, o->dim);
  if (o->gradient && !k->gradient)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s has no gradient: set gradient = 0", k->title);
  if (k->uses_softening && (!(o->softening >= 0) || !isfinite(o->softening)))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "softening must be finite and >= 0, got %g", o->softening);
  if (k->uses_sigma && (!(o->sigma > 0) || !isfinite(o->sigma)))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "sigma must be finite and > 0, got %g", o->sigma);
  if (o->precision != FMMCL_SINGLE && o->precision != FMMCL_DOUBLE)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "unknown precision %d", (int)o->precision);
  return FMMCL_SUCCESS;
}

/* Checks a point set: present, non-empty, finite. */
fmmcl_status fmmcl_points_check(fmmcl_context ctx, const char *what, size_t n, const double *x, int dim) {
  if (n == 0) return fmmcl_fail(ctx, FMMCL_ERROR_EMPTY_INPUT, "no %s (N = 0)", what);
  if (!x) return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "%s array is NULL", what);
  if (n > (size_t)UINT32_MAX / 16)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "too many %s: %zu", what, n);
  if (!fmmcl_all_finite(x, n * (size_t)dim))
    return fmmcl_fail(ctx, FMMCL_ERROR_NONFINITE_INPUT, "a %s coordinate is NaN or infinite", what);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_plan_create(fmmcl_context ctx, const fmmcl_plan_options *opt, size_t n_sources,
                               const double *sources, size_t n_targets, const double *targets,
                               fmmcl_plan *out) {
  if (!ctx) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_create: ctx is NULL");
  fmmcl_clear_error(ctx);
  if (!opt || !out) return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_create: NULL argument");
  *out = NULL;
  fmmcl_status st = fmmcl_options_check(ctx, opt);
  if (!st) st = fmmcl_points_check(ctx, "sources", n_sources, sources, opt->dim);
  if (!st && targets) st = fmmcl_points_check(ctx, "targets", n_targets, targets, opt->dim);
  if (st) return st;
  if (opt->precision == FMMCL_DOUBLE && !ctx->dev.info.has_fp64)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "device %s has no double precision (cl_khr_fp64)",
                      ctx->dev.info.device_name);
  fmmcl_plan_options resolved = *opt;
  if (opt->method == FMMCL_AUTO) {
    st = fmmcl_model_resolve(ctx, opt, n_sources, sources, n_targets, targets, &resolved);
    if (st) return st;
    opt = &resolved;
  }
  const fmmcl_method_ops *ops;
  st = fmmcl_method_lookup(ctx, opt, &ops);
  if (st) return st;
  return fmmcl_plan_build(ctx, opt, ops, n_sources, sources, n_targets, targets, NULL, NULL, out);
}

fmmcl_status fmmcl_plan_build(fmmcl_context ctx, const fmmcl_plan_options *opt, const fmmcl_method_ops *ops,
                              size_t n_sources, const double *sources, size_t n_targets, const double *targets,
                              fmmcl_plan_state_fn create, const void *arg, fmmcl_plan *out) {
  *out = NULL;
  fmmcl_plan plan = calloc(1, sizeof *plan);
  if (!plan) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->ctx = ctx;
  plan->opt = *opt;
  plan->n_sources = n_sources;
  plan->targets_are_sources = targets == NULL;
  plan->n_targets = targets ? n_targets : n_sources;
  plan->ops = ops;
  double t0 = fmmcl_wall_seconds();
  const double *tgt = targets ? targets : sources;
  fmmcl_status st = create ? create(plan, sources, tgt, arg) : ops->create(plan, sources, tgt);
  if (st) {
    ops->destroy(plan);
    free(plan);
    return st;
  }
  fmmcl_plan_record(plan, "build", fmmcl_wall_seconds() - t0);
  *out = plan;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_plan_execute(fmmcl_plan plan, const double *charges, double *potential, double *gradient) {
  if (!plan) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_execute: plan is NULL");
  fmmcl_context ctx = plan->ctx;
  fmmcl_clear_error(ctx);
  if (!charges || !potential)
    return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_execute: %s is NULL",
                      charges ? "potential" : "charges");
  if (gradient && !plan->opt.gradient)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "a gradient array was passed but the plan was created without gradient");
  if (!fmmcl_all_finite(charges, plan->n_sources))
    return fmmcl_fail(ctx, FMMCL_ERROR_NONFINITE_INPUT, "a charge is NaN or infinite");
  /* keep only the build time; execution phases start afresh */
  size_t keep = 0;
  for (size_t i = 0; i < plan->n_phases; i++)
    if (strcmp(plan->phases[i].name, "build") == 0) plan->phases[keep++] = plan->phases[i];
  plan->n_phases = keep;
  return plan->ops->execute(plan, charges, potential, gradient);
}

fmmcl_status fmmcl_plan_destroy(fmmcl_plan plan) {
  if (!plan) return FMMCL_SUCCESS;
  plan->ops->destroy(plan);
  free(plan);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_plan_timings(fmmcl_plan plan, fmmcl_phase_time *out, size_t capacity, size_t *count) {
  if (!plan || !count || (capacity && !out))
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_timings: NULL argument");
  if (plan->ops->timings) return plan->ops->timings(plan, out, capacity, count);
  for (size_t i = 0; i < plan->n_phases && i < capacity; i++) out[i] = plan->phases[i];
  *count = plan->n_phases;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_plan_error_bound(fmmcl_plan plan, double *bound) {
  if (!plan || !bound)
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_error_bound: NULL argument");
  if (!plan->ops->error_bound)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_UNSUPPORTED, "this plan's method (%s) reports no error bound",
                      plan->ops->name);
  return plan->ops->error_bound(plan, bound);
}

/* Every direct sum is exact up to the device's rounding. */
fmmcl_status fmmcl_direct_error_bound(fmmcl_plan plan, double *bound) {
  (void)plan;
  *bound = 0;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_plan_build_options(fmmcl_plan plan, char *buf, size_t len) {
  if (!plan || !buf || !len)
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_build_options: NULL argument");
  snprintf(buf, len, "%s", plan->build_options);
  return FMMCL_SUCCESS;
}
