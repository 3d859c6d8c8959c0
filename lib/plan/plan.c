/* plan.c — plan options, argument validation shared by every method, and
 * dispatch of create/execute/destroy and the queries to the chosen method. */
#include <float.h>
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
  opt->dim = k ? k->default_dim : 3;
  opt->gradient = k ? k->gradient : 1;
  opt->softening = 0.0;
  opt->sigma = 1.0;
  /* the treecode's: each far entry takes the degree its ratio needs, so
   * accepting a cell at a ratio up to 0.6 with a higher order costs less
   * than opening it into eight (benchmarks/README.md) */
  opt->theta = 0; /* chosen by the treecode from the tolerance */
  /* the defaults are filled all the same, so a caller who goes on anyway
   * meets the same refusal again at fmmcl_plan_create */
  if (!k)
    return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT, "fmmcl_plan_options_init: unknown kernel %d",
                      (int)kernel);
  return FMMCL_SUCCESS;
}

/* Checks the options alone (not the points); shared with the reference. */
fmmcl_status fmmcl_options_check(fmmcl_context ctx, const fmmcl_plan_options *o) {
  const fmmcl_kernel_desc *k = fmmcl_kernel_describe(o->kernel);
  if (!k) return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "unknown kernel %d", (int)o->kernel);
  if (k->dim_min == k->dim_max && o->dim != k->dim_min)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s needs dim = %d, got %d", k->title, k->dim_min,
                      o->dim);
  if (o->dim < k->dim_min || o->dim > k->dim_max)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s needs dim in %d..%d, got %d", k->title,
                      k->dim_min, k->dim_max, o->dim);
  if (o->gradient && !k->gradient)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s has no gradient: set gradient = 0", k->title);
  if (k->uses_softening && (!(o->softening >= 0) || !isfinite(o->softening)))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "softening must be finite and >= 0, got %g",
                      o->softening);
  if (k->uses_sigma && (!(o->sigma > 0) || !isfinite(o->sigma)))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "sigma must be finite and > 0, got %g", o->sigma);
  if (k->uses_kernel_param && (!(o->kernel_param >= 0) || !isfinite(o->kernel_param)))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "kernel_param must be finite and >= 0, got %g",
                      o->kernel_param);
  if (o->precision != FMMCL_SINGLE && o->precision != FMMCL_DOUBLE)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "unknown precision %d", (int)o->precision);
  return fmmcl_ext_options_check(ctx, o);
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

/* The largest finite value of a precision: every limit below derives from it. */
static double precision_max(fmmcl_precision p) { return p == FMMCL_DOUBLE ? DBL_MAX : FLT_MAX; }
static const char *precision_word(fmmcl_precision p) { return p == FMMCL_DOUBLE ? "double" : "single"; }

/* Largest |coordinate| whose pairs' r^2 stays finite in precision p:
 * differences reach twice the magnitude, so r^2 <= dim (2 |x|)^2 < max. */
double fmmcl_coordinate_limit(fmmcl_precision p, int dim) { return sqrt(precision_max(p) / (4.0 * dim)); }

/* Largest |x| over a point set, and its extent (the longest side of its box). */
static void magnitude_extent(size_t n, const double *x, int dim, double *mag, double *extent) {
  double lo[FMMCL_MAX_DIM], hi[FMMCL_MAX_DIM];
  for (int d = 0; d < FMMCL_MAX_DIM; d++) lo[d] = INFINITY, hi[d] = -INFINITY;
  /* a time step's update reads every coordinate here: in parallel, and
   * compares rather than fmin calls (min and max are exact, so the
   * threads' order cannot change them; a NaN is skipped, as fmin did) */
#pragma omp parallel for schedule(static) if (n > 65536) reduction(min : lo[:FMMCL_MAX_DIM]) \
    reduction(max : hi[:FMMCL_MAX_DIM])
  for (size_t i = 0; i < n; i++)
    for (int d = 0; d < dim; d++) {
      const double v = x[i * (size_t)dim + (size_t)d];
      lo[d] = v < lo[d] ? v : lo[d], hi[d] = v > hi[d] ? v : hi[d];
    }
  for (int d = 0; d < dim; d++) {
    *mag = fmax(*mag, fmax(fabs(lo[d]), fabs(hi[d])));
    *extent = fmax(*extent, hi[d] - lo[d]);
  }
}

/* The power of 1/r the plan evaluates at a pair's distance (0: none, or
 * softened): 1/r^3 for the 3D Laplace gradient. */
static int inverse_power(const fmmcl_plan_options *o) {
  if (o->method == FMMCL_BBFMM || o->bbfmm_kernel != FMMCL_BBFMM_PLAN_KERNEL) {
    if (o->bbfmm_kernel == FMMCL_BBFMM_INV_R2) return 2;
    if (o->bbfmm_kernel == FMMCL_BBFMM_LAPLACE || o->bbfmm_kernel == FMMCL_BBFMM_YUKAWA) return 1;
    if (o->bbfmm_kernel != FMMCL_BBFMM_PLAN_KERNEL) return 0;
  }
  if (o->kernel != FMMCL_LAPLACE_3D || o->softening > 0) return 0;
  return o->gradient ? 3 : 1;
}

/* Refuses inputs whose arithmetic cannot be represented in the plan's
 * precision, before any work: r^2 of the coordinates, 1/(2 sigma^2), and a
 * 1/r^k that must overflow at some pair. The last uses the pigeonhole
 * principle: of N points in a cube of side E, split into k^3 < N cells, two
 * share a cell, so some pair is at most sqrt(dim) E / k apart (coincident
 * points, which are skipped, aside). */
fmmcl_status fmmcl_ranges_check(fmmcl_context ctx, const fmmcl_plan_options *o, size_t n_sources,
                                const double *sources, size_t n_targets, const double *targets) {
  double mag = 0, extent = 0;
  magnitude_extent(n_sources, sources, o->dim, &mag, &extent);
  if (targets) magnitude_extent(n_targets, targets, o->dim, &mag, &extent);
  return fmmcl_ranges_check_bounds(ctx, o, n_sources, targets != NULL, mag, extent);
}

fmmcl_status fmmcl_ranges_check_bounds(fmmcl_context ctx, const fmmcl_plan_options *o, size_t n_sources,
                                       int has_targets, double mag, double extent) {
  const double max = precision_max(o->precision), limit = fmmcl_coordinate_limit(o->precision, o->dim);
  const char *word = precision_word(o->precision);
  if (!(mag <= limit))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "a coordinate of magnitude %g exceeds %g, beyond which r^2 overflows %s precision "
                      "(sqrt(max / (4 dim))); %s",
                      mag, limit, word,
                      o->precision == FMMCL_SINGLE ? "use FMMCL_DOUBLE or rescale" : "rescale");
  const fmmcl_kernel_desc *k = fmmcl_kernel_describe(o->kernel);
  const int gaussian = (k && k->uses_sigma && o->bbfmm_kernel == FMMCL_BBFMM_PLAN_KERNEL) ||
                       o->bbfmm_kernel == FMMCL_BBFMM_GAUSSIAN;
  /* sigma^2 a normal number (a device may flush subnormals to zero), so
   * 1/(2 sigma^2) <= 1/(2 min) is finite: else the self pair is inf * 0 */
  const double sigma_min = sqrt(o->precision == FMMCL_DOUBLE ? DBL_MIN : FLT_MIN);
  if (gaussian && !(o->sigma >= sigma_min))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "sigma = %g is below %g (the square root of the smallest normal number), where "
                      "1/(2 sigma^2) overflows %s precision; rescale the coordinates and sigma",
                      o->sigma, sigma_min, word);
  if (k && k->uses_softening && !(o->softening <= limit))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "softening %g exceeds %g, beyond which eps^2 overflows %s precision", o->softening,
                      limit, word);
  /* exp(ikr) at the farthest pair (at most sqrt(dim) extent apart): its
   * phase Re k r rounds by u Re k r radians, and the dipole terms square
   * k r; past either limit no digit of the sum is left */
  const double kmod = k && o->kernel == FMMCL_HELMHOLTZ_3D ? hypot(o->wavenumber_re, o->wavenumber_im) : 0;
  const double far = sqrt((double)o->dim) * extent,
               u = o->precision == FMMCL_DOUBLE ? DBL_EPSILON / 2 : FLT_EPSILON / 2;
  if (kmod > 0 && !(kmod * far <= sqrt(max) / 4))
    return fmmcl_fail(
        ctx, FMMCL_ERROR_INVALID_ARGUMENT,
        "|k| r reaches %g at the farthest pair (%g apart), beyond %g, where (k r)^2 overflows %s "
        "precision; rescale the coordinates and k",
        kmod * far, far, sqrt(max) / 4, word);
  if (kmod > 0 && !(u * fabs(o->wavenumber_re) * far < 1))
    return fmmcl_fail(
        ctx, FMMCL_ERROR_INVALID_ARGUMENT,
        "Re k r reaches %g at the farthest pair (%g apart): %s precision rounds the phase "
        "exp(i Re k r) there by u Re k r = %g radians, and nothing of the sum is left; %s",
        fabs(o->wavenumber_re) * far, far, word, u * fabs(o->wavenumber_re) * far,
        o->precision == FMMCL_SINGLE ? "use FMMCL_DOUBLE or a smaller k r" : "use a smaller k r");
  const int power = inverse_power(o);
  /* only where the targets are the sources is the close pair one that is summed */
  const double n = (double)n_sources;
  const double cells = floor(cbrt(n - 1) + 1e-9); /* k with k^3 < n, as large as possible */
  if (power && !has_targets && extent > 0 && cells >= 1) {
    const double r_max = sqrt((double)o->dim) * extent / cells, r_min = pow(max, -1.0 / power);
    if (r_max < r_min)
      return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                        "%zu points within an extent of %g must have a pair closer than %g, where 1/r^%d "
                        "overflows %s precision (max^(-1/%d) = %g); %s",
                        (size_t)n, extent, r_max, power, word, power, r_min,
                        o->precision == FMMCL_SINGLE ? "use FMMCL_DOUBLE or rescale" : "rescale");
  }
  return FMMCL_SUCCESS;
}

/* Sum |q| within the precision's range, with headroom for the partial
 * sums and expansion coefficients that reach a few times the total. */
fmmcl_status fmmcl_charges_total_check(fmmcl_plan plan, double total) {
  const double max = precision_max(plan->opt.precision), limit = ldexp(max, -4);
  if (!(total <= limit))
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "the charges' sum of |q| = %g exceeds %g (max / 16), beyond which the sums overflow %s "
                      "precision; rescale the charges",
                      total, limit, precision_word(plan->opt.precision));
  return FMMCL_SUCCESS;
}

static fmmcl_status charges_check(fmmcl_plan plan, const double *charges) {
  double total = 0;
#pragma omp parallel for reduction(+ : total) if (plan->n_sources > 100000)
  for (size_t i = 0; i < plan->n_sources; i++) total += fabs(charges[i]);
  return fmmcl_charges_total_check(plan, total);
}

/* charges_check for every source array of an evaluation together. */
static fmmcl_status strengths_check(fmmcl_plan plan, const fmmcl_sources_data *in) {
  const double max = precision_max(plan->opt.precision), limit = ldexp(max, -4);
  const struct {
    const double *v;
    size_t per;
  } arrays[] = {{in->charges, 1},         {in->dipoles, 3}, {in->complex_charges, 2},
                {in->complex_dipoles, 6}, {in->forces, 3},  {in->stresslet_strengths, 3}};
  double total = 0;
  for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
    if (arrays[k].v)
      for (size_t i = 0; i < plan->n_sources * arrays[k].per; i++) total += fabs(arrays[k].v[i]);
  if (!(total <= limit))
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "the sources' strengths sum to %g in magnitude, above %g (max / 16), beyond which the "
                      "sums overflow %s precision; rescale them",
                      total, limit, precision_word(plan->opt.precision));
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
  if (!st) st = fmmcl_ranges_check(ctx, opt, n_sources, sources, n_targets, targets);
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
                              size_t n_sources, const double *sources, size_t n_targets,
                              const double *targets, fmmcl_plan_state_fn create, const void *arg,
                              fmmcl_plan *out) {
  *out = NULL;
  fmmcl_plan plan = calloc(1, sizeof *plan);
  if (!plan) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->ctx = ctx;
  plan->opt = *opt;
  plan->n_sources = n_sources;
  plan->targets_are_sources = targets == NULL;
  plan->n_targets = targets ? n_targets : n_sources;
  plan->ops = ops;
  plan->borrowed = create != NULL;
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

/* The first index of v[0..n) that is NaN or infinite, or n. */
static size_t first_nonfinite(const double *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return i;
  return n;
}

/* A method returns whatever its arithmetic produced; an overflow of the
 * plan's precision (1/r^3 at tiny r, huge charges, 1/(2 sigma^2)) shows as
 * NaN or infinity, which must never pass as a result. Checked here, after
 * every method, so no method can forget it. */
static fmmcl_status outputs_check(fmmcl_plan plan, const double *potential, const double *gradient) {
  const size_t ng = plan->n_targets * (size_t)plan->opt.dim;
  /* the common case in one parallel pass; the search below only names the culprit */
  if (fmmcl_all_finite(potential, plan->n_targets) && (!gradient || fmmcl_all_finite(gradient, ng)))
    return FMMCL_SUCCESS;
  const char *hint = plan->opt.precision == FMMCL_SINGLE
                         ? "use FMMCL_DOUBLE, or rescale coordinates and charges"
                         : "rescale coordinates and charges";
  size_t i = first_nonfinite(potential, plan->n_targets);
  if (i < plan->n_targets)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_NONFINITE_OUTPUT,
                      "the potential at target %zu is %s: the %s sum overflowed %s precision; %s", i,
                      isnan(potential[i]) ? "NaN" : "infinite", plan->ops->name,
                      plan->opt.precision == FMMCL_SINGLE ? "single" : "double", hint);
  i = gradient ? first_nonfinite(gradient, ng) : ng;
  if (i < ng)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_NONFINITE_OUTPUT,
                      "gradient component %d at target %zu is %s: the %s sum overflowed %s precision; %s",
                      (int)(i % (size_t)plan->opt.dim), i / (size_t)plan->opt.dim,
                      isnan(gradient[i]) ? "NaN" : "infinite", plan->ops->name,
                      plan->opt.precision == FMMCL_SINGLE ? "single" : "double", hint);
  return FMMCL_SUCCESS;
}

void fmmcl_plan_restart_phases(fmmcl_plan plan) {
  /* keep only the build and update times; execution phases start afresh */
  size_t keep = 0;
  for (size_t i = 0; i < plan->n_phases; i++)
    if (strcmp(plan->phases[i].name, "build") == 0 || strcmp(plan->phases[i].name, "update") == 0)
      plan->phases[keep++] = plan->phases[i];
  plan->n_phases = keep;
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
  fmmcl_status st = charges_check(plan, charges);
  if (st) return st;
  fmmcl_plan_restart_phases(plan);
  st = plan->ops->execute(plan, charges, potential, gradient);
  if (!st) st = outputs_check(plan, potential, gradient);
  return st;
}

fmmcl_status fmmcl_plan_evaluate(fmmcl_plan plan, const fmmcl_sources_data *in, fmmcl_targets_data *out) {
  if (!plan) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_evaluate: plan is NULL");
  fmmcl_context ctx = plan->ctx;
  fmmcl_clear_error(ctx);
  fmmcl_status st = fmmcl_evaluate_check(ctx, &plan->opt, plan->n_sources, in, out);
  if (st) return st;
  if (!plan->ops->evaluate) { /* a charges-only method: the checks left charges, potential, gradient */
    double *pot = out->potential ? out->potential : malloc(plan->n_targets * sizeof *pot);
    if (!pot) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
    st = fmmcl_plan_execute(plan, in->charges, pot, out->gradient);
    if (pot != out->potential) free(pot);
    return st;
  }
  st = strengths_check(plan, in);
  if (st) return st;
  size_t keep = 0;
  for (size_t i = 0; i < plan->n_phases; i++)
    if (strcmp(plan->phases[i].name, "build") == 0) plan->phases[keep++] = plan->phases[i];
  plan->n_phases = keep;
  st = plan->ops->evaluate(plan, in, out);
  if (st) return st;
  /* each output checked as the potential is: values per target */
  return fmmcl_evaluate_outputs_check(ctx, plan->ops->name, plan->opt.precision, plan->n_targets,
                                      plan->opt.dim, out);
}

fmmcl_status fmmcl_plan_destroy(fmmcl_plan plan) {
  if (!plan) return FMMCL_SUCCESS;
  plan->ops->destroy(plan);
  fmmcl_resident_release(plan);
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
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_NULL_POINTER,
                      "fmmcl_plan_error_bound: NULL argument");
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
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_NULL_POINTER,
                      "fmmcl_plan_build_options: NULL argument");
  snprintf(buf, len, "%s", plan->build_options);
  return FMMCL_SUCCESS;
}
