/* evaluate.c — what fmmcl_plan_evaluate and fmmcl_reference_evaluate accept:
 * the options of the richer kernels, and the arrays each plan reads and writes. */
#include <math.h>
#include <stddef.h>

#include "plan/registry.h"

fmmcl_status fmmcl_ext_options_check(fmmcl_context ctx, const fmmcl_plan_options *o) {
  const int laplace = o->kernel == FMMCL_LAPLACE_3D, helmholtz = o->kernel == FMMCL_HELMHOLTZ_3D,
            stokes = o->kernel == FMMCL_STOKES_3D;
  const char *title = fmmcl_kernel_describe(o->kernel)->title; /* the kernel was checked first */
  if (o->dipoles && !laplace && !helmholtz)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "%s takes no dipoles (LAPLACE_3D and HELMHOLTZ_3D do): set dipoles = 0", title);
  if (o->hessian && !laplace)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "%s has no Hessian (LAPLACE_3D has): set hessian = 0", title);
  if ((o->dipoles || o->hessian) && o->softening != 0)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "dipoles and Hessians are summed without softening");
  if ((o->stresslets || o->pressure) && !stokes)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s has no %s (STOKES_3D has): set it to 0", title,
                      o->stresslets ? "stresslets" : "pressure");
  if (!helmholtz && (o->wavenumber_re != 0 || o->wavenumber_im != 0))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "%s has no wavenumber (HELMHOLTZ_3D has): leave it 0", title);
  if (helmholtz && (!isfinite(o->wavenumber_re) || !isfinite(o->wavenumber_im)))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "the wavenumber must be finite, got %g + %gi",
                      o->wavenumber_re, o->wavenumber_im);
  /* Im k < 0 grows exponentially with distance: no physical wave */
  if (helmholtz && !(o->wavenumber_im >= 0))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "the wavenumber's imaginary part must be >= 0 (exp(ikr) must not grow), got %g",
                      o->wavenumber_im);
  /* a method AUTO resolved keeps it: only the kernel is checked */
  if (o->executions != 0 && o->kernel != FMMCL_GAUSSIAN)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "%s has no executions (GAUSSIAN with AUTO reads it): leave it 0", title);
  if (o->executions < 0)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "executions must be >= 0, got %d", o->executions);
  const fmmcl_kernel_desc *k = fmmcl_kernel_describe(o->kernel);
  if (k->ext && o->bbfmm_kernel != FMMCL_BBFMM_PLAN_KERNEL)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s takes no bbfmm_kernel", title);
  return FMMCL_SUCCESS;
}

int fmmcl_options_need_evaluate(const fmmcl_plan_options *o) {
  const fmmcl_kernel_desc *k = fmmcl_kernel_describe(o->kernel);
  return (k && k->ext) || o->dipoles || o->hessian;
}

/* One array of the evaluation: where it is, how many doubles per point,
 * and whether the plan reads (or may write) it. */
typedef struct {
  const double *v;
  size_t per;
  int allowed;
  const char *name;
} slot;

static fmmcl_status refuse_extra(fmmcl_context ctx, const slot *s, size_t n, const char *title) {
  for (size_t i = 0; i < n; i++)
    if (s[i].v && !s[i].allowed)
      return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                        "fmmcl_plan_evaluate: %s was passed, but this %s plan has none (see its options)",
                        s[i].name, title);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_evaluate_check(fmmcl_context ctx, const fmmcl_plan_options *o, size_t ns,
                                  const fmmcl_sources_data *in, const fmmcl_targets_data *out) {
  if (!in || !out) return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_evaluate: NULL argument");
  const int lap = o->kernel == FMMCL_LAPLACE_3D, helm = o->kernel == FMMCL_HELMHOLTZ_3D,
            stokes = o->kernel == FMMCL_STOKES_3D, real = !helm && !stokes;
  const char *title = fmmcl_kernel_describe(o->kernel)->title;
  const slot src[] = {{in->charges, 1, real, "charges"},
                      {in->dipoles, 3, lap && o->dipoles, "dipoles"},
                      {in->complex_charges, 2, helm, "complex_charges"},
                      {in->complex_dipoles, 6, helm && o->dipoles, "complex_dipoles"},
                      {in->forces, 3, stokes, "forces"},
                      {in->stresslet_strengths, 3, stokes && o->stresslets, "stresslet_strengths"},
                      {in->stresslet_orientations, 3, stokes && o->stresslets, "stresslet_orientations"}};
  const slot dst[] = {{out->potential, 1, real, "potential"},
                      {out->gradient, (size_t)o->dim, real && o->gradient, "gradient"},
                      {out->hessian, 6, lap && o->hessian, "hessian"},
                      {out->complex_potential, 2, helm, "complex_potential"},
                      {out->complex_gradient, 6, helm && o->gradient, "complex_gradient"},
                      {out->velocity, 3, stokes, "velocity"},
                      {out->pressure, 1, stokes && o->pressure, "pressure"}};
  const size_t n_src = sizeof src / sizeof src[0], n_dst = sizeof dst / sizeof dst[0];
  fmmcl_status st = refuse_extra(ctx, src, n_src, title);
  if (!st) st = refuse_extra(ctx, dst, n_dst, title);
  if (st) return st;
  /* what must be there: some source strength of the kernel, both halves of
   * a stresslet, some output */
  const int has_any = lap && o->dipoles    ? in->charges || in->dipoles
                      : helm && o->dipoles ? in->complex_charges || in->complex_dipoles
                      : helm               ? in->complex_charges != NULL
                      : stokes             ? in->forces || in->stresslet_strengths
                                           : in->charges != NULL;
  if (!has_any)
    return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_evaluate: no source strengths for %s (%s)",
                      title,
                      lap      ? (o->dipoles ? "charges or dipoles" : "charges")
                      : helm   ? (o->dipoles ? "complex_charges or complex_dipoles" : "complex_charges")
                      : stokes ? (o->stresslets ? "forces or stresslet_strengths" : "forces")
                               : "charges");
  if (stokes && !in->stresslet_strengths != !in->stresslet_orientations)
    return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER,
                      "fmmcl_plan_evaluate: a stresslet needs both strengths and orientations");
  int any_out = 0;
  for (size_t i = 0; i < n_dst; i++) any_out |= dst[i].v != NULL;
  if (!any_out) return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_evaluate: no output array");
  for (size_t i = 0; i < n_src; i++)
    if (src[i].v && !fmmcl_all_finite(src[i].v, ns * src[i].per))
      return fmmcl_fail(ctx, FMMCL_ERROR_NONFINITE_INPUT,
                        "fmmcl_plan_evaluate: a value of %s is NaN or infinite", src[i].name);
  return FMMCL_SUCCESS;
}

/* The first index of v[0..n) that is NaN or infinite, or n. */
static size_t first_nonfinite(const double *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return i;
  return n;
}

fmmcl_status fmmcl_evaluate_outputs_check(fmmcl_context ctx, const char *method, fmmcl_precision precision,
                                          size_t m, int dim, const fmmcl_targets_data *out) {
  const struct {
    const double *v;
    size_t per;
    const char *name;
  } outs[] = {{out->potential, 1, "potential"},
              {out->gradient, (size_t)dim, "gradient"},
              {out->hessian, 6, "Hessian"},
              {out->complex_potential, 2, "complex potential"},
              {out->complex_gradient, 6, "complex gradient"},
              {out->velocity, 3, "velocity"},
              {out->pressure, 1, "pressure"}};
  for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++) {
    if (!outs[k].v || fmmcl_all_finite(outs[k].v, m * outs[k].per)) continue;
    const size_t i = first_nonfinite(outs[k].v, m * outs[k].per);
    return fmmcl_fail(ctx, FMMCL_ERROR_NONFINITE_OUTPUT,
                      "the %s at target %zu is NaN or infinite: the %s sum overflowed %s precision; %s",
                      outs[k].name, i / outs[k].per, method, precision == FMMCL_DOUBLE ? "double" : "single",
                      precision == FMMCL_SINGLE ? "use FMMCL_DOUBLE, or rescale coordinates and charges"
                                                : "rescale coordinates and charges");
  }
  return FMMCL_SUCCESS;
}
